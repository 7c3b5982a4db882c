"""An experiment's dataset: JSON Lines of examples in LangSmith's shape.

Each line is ``{"inputs": {KIND: ...}, "outputs": {...labels...}, "metadata": {...}}`` with
one of four kinds of input, run in file order:

- ``message``: a chat message (the input message of docs/contracts.md) through the reply
  graph (or observe + rank_context in rank mode); labels ``action`` (what the bot should
  have done), ``replied`` (whether it should have said anything), ``reply_to`` (the id, or
  ids, of the message it answers: the context it needs);
- ``job``: a memory job through the memory graph; no labels needed (gate and degraded rates);
- ``question``: ``{text, platform?, chat_type, chat_id, persona_id?, user_id?, user_name?,
  asked_at?}`` searched as the reply path searches (the asker's 我 is them); labels
  ``evidence_ids`` (memory ids) or ``evidence_texts`` (a memory holding the text counts);
- ``profile``: ``{user_id, platform?, chat_type, chat_id}``; label ``slots`` (``{"job":
  "医生", ...}``: what a chat should have learned about the person).

A bare message (a line of ``groupmind replay``'s input) or a bare memory job (a line of
``groupmind remember``'s) is read as an example with no labels. Example ids are derived from
the dataset and the line, so every arm scores the same examples under the same ids.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langsmith.schemas import Example

from groupmind.lines import read_jsonl
from state.validation import InputError

Kind = Literal["message", "job", "question", "profile"]
KINDS: tuple[Kind, ...] = ("message", "job", "question", "profile")
NAMESPACE = uuid.UUID("1b0c6e1a-2f4d-5c8e-9a3b-657870657269")


@dataclass(frozen=True)
class Dataset:
    name: str  # the file's stem and a digest of its content: a changed file is a new dataset
    id: uuid.UUID
    examples: list[Example]

    def kinds(self) -> set[str]:
        return {kind_of(e) for e in self.examples}


def kind_of(example: Example) -> Kind:
    for kind in KINDS:
        if kind in (example.inputs or {}):
            return kind
    raise InputError("inputs", f"example {example.id}: none of {', '.join(KINDS)}")


def _shape(raw: Any, number: int) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InputError(f"line {number}", f"must be a JSON object, got {type(raw).__name__}")
    if "inputs" in raw:
        inputs = raw["inputs"]
        kinds = [k for k in KINDS if isinstance(inputs, dict) and k in inputs]
        if len(kinds) != 1:
            raise InputError(
                f"line {number}", f"inputs must hold exactly one of {', '.join(KINDS)}"
            )
        for part in ("outputs", "metadata"):
            if not isinstance(raw.get(part) or {}, dict):
                raise InputError(f"line {number}", f"{part} must be a JSON object")
        return raw
    if "request_id" in raw:
        return {"inputs": {"job": raw}}
    if "message_id" in raw and "content" in raw:
        return {"inputs": {"message": raw}}
    raise InputError(
        f"line {number}",
        "neither an example ({inputs, outputs}) nor a bare message or memory job",
    )


def load_dataset(
    path: Path, limit: int | None = None, dataset_id: uuid.UUID | None = None
) -> Dataset:
    """Every example of the file, or an InputError naming the first bad line (a dataset
    that is half read would compare arms on what happened to parse)."""
    if not path.is_file():
        raise InputError("dataset", f"{path}: no such file")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    name = f"{path.stem}-{digest}"
    did = dataset_id or uuid.uuid5(NAMESPACE, name)
    created = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    examples = []
    for line in read_jsonl(path):
        if line.problem is not None:
            raise InputError(f"line {line.number}", line.problem)
        shaped = _shape(line.raw, line.number)
        examples.append(
            Example(
                id=uuid.uuid5(did, f"line-{line.number}"),
                dataset_id=did,
                inputs=shaped["inputs"],
                outputs=shaped.get("outputs") or {},
                metadata={**(shaped.get("metadata") or {}), "line": line.number},
                created_at=created,
            )
        )
        if limit is not None and len(examples) >= limit:
            break
    if not examples:
        raise InputError("dataset", f"{path}: no examples")
    return Dataset(name=name, id=did, examples=examples)


def rebased(dataset: Dataset, dataset_id: uuid.UUID) -> Dataset:
    """The same examples under a dataset id a LangSmith server gave (ids follow it)."""
    examples = [
        e.model_copy(
            update={
                "id": uuid.uuid5(dataset_id, f"line-{e.metadata['line']}"),  # type: ignore[index]
                "dataset_id": dataset_id,
            }
        )
        for e in dataset.examples
    ]
    return Dataset(name=dataset.name, id=dataset_id, examples=examples)
