"""Errors as an operator reads them: one line naming the store or the field and the cause,
never a statement's parameters, never what was said."""

from __future__ import annotations


def storage_error(exc: BaseException) -> str | None:
    """A storage failure as one line (a read-only or full disk, a database gone), or None
    when ``exc`` is not one."""
    from sqlalchemy.exc import SQLAlchemyError

    if isinstance(exc, SQLAlchemyError):
        cause = getattr(exc, "orig", None) or exc
        return f"SQL database: {type(cause).__name__}: {_first_line(cause)}"
    if type(exc).__module__.startswith("chromadb"):
        return f"Chroma: {type(exc).__name__}: {_first_line(exc)}"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"storage: {type(exc).__name__}: {exc.strerror or _first_line(exc)}{where}"
    return None


def one_line(exc: BaseException) -> str:
    """Any failure as one line: a storage one as ``storage_error`` says, else its type and
    the first line of its message."""
    return storage_error(exc) or f"{type(exc).__name__}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__
