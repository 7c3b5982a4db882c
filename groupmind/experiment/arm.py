"""One arm at work: a fresh deployment of its own (data dir, stores, graphs, memory
worker) with the arm's settings and variants, and the target LangSmith's ``evaluate``
calls once per example, in the dataset's order."""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from langsmith import tracing_context

from domain.scope import ChatScope
from groupmind.chatting import checked_variants, rank_only, reply_context, run_reply
from groupmind.experiment.spec import Arm, Mode, arm_settings
from groupmind.session import Session, open_session
from groupmind.settings import Settings
from nodes.variants import UnknownVariant
from state.slots import graph_slots
from state.validation import InputError, parse_timestamp
from stores.base import EventQuery, profile_view

log = logging.getLogger("groupmind.experiment")


class ArmRun:
    """``with ArmRun(base, arm, data_dir, mode) as target: target(inputs)``."""

    def __init__(
        self,
        base: Settings,
        arm: Arm,
        data_dir: Path,
        mode: Mode,
        top_k: int = 10,
        *,
        traced: bool = False,
        tick: Callable[[], None] = lambda: None,
    ) -> None:
        """``traced``: the graphs' runs go to LangSmith under each example's run (an uploaded
        experiment); else nothing is traced (LangChain would send a locally evaluated
        example's inner runs to the offline client)."""
        self.arm, self.mode, self.top_k, self.traced, self.tick = arm, mode, top_k, traced, tick
        shutil.rmtree(data_dir, ignore_errors=True)  # every run of an arm starts empty
        self.settings = arm_settings(base, arm, data_dir)
        memory = {k: v for k, v in arm.variants.items() if k in graph_slots("memory")}
        self.session: Session = open_session(self.settings, variants=memory)
        try:
            checked_variants(dict(arm.variants), self.session.deps)
        except UnknownVariant as exc:
            self.close()
            raise InputError(f"arm {arm.name}", str(exc)) from None
        self.context = reply_context(self.session.deps, dict(arm.variants))
        self.graph = self.session.reply_graph() if mode == "reply" else None
        self.background = (
            self.session.runtime.start_background_worker() if mode == "reply" else None
        )

    @property
    def variants(self) -> dict[str, str]:
        """Every slot's variant as this arm runs it: the reply graph's and the memory's."""
        return {**self.session.worker.context.variants, **self.context.variants}

    def __enter__(self) -> ArmRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if getattr(self, "background", None) is not None:
            self.background.drain()  # type: ignore[union-attr]
            self.background.stop()  # type: ignore[union-attr]
        self.session.runtime.engine.dispose()

    def __call__(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The outputs the evaluators read; a refused input is an ``error``, never a raise
        (one bad example does not end the arm)."""
        kind = next(k for k in ("message", "job", "question", "profile") if k in inputs)
        started = time.perf_counter()
        try:
            with contextlib.nullcontext() if self.traced else tracing_context(enabled=False):
                out = getattr(self, f"_{kind}")(inputs[kind])
        except InputError as exc:
            return {"kind": kind, "error": str(exc)}
        finally:
            self.tick()
        elapsed = (time.perf_counter() - started) * 1000
        return {"kind": kind, "latency_ms": round(out.pop("_ms", elapsed), 3), **out}

    def _message(self, raw: Any) -> dict[str, Any]:
        deps = self.session.deps
        if self.graph is None:
            t0 = time.perf_counter()
            ranked = rank_only(deps, raw, self.context)
            return {**ranked, "_ms": (time.perf_counter() - t0) * 1000}
        t0 = time.perf_counter()
        out = run_reply(self.graph, deps, raw, self.context)
        ms = (time.perf_counter() - t0) * 1000
        assert self.background is not None
        self.background.drain()  # its memory is written before the next example is asked
        keep = (
            "message_id",
            "action",
            "reason",
            "chat_state",
            "context_ids",
            "ranked",
            "memory_ids",
            "reply",
            "fallback",
            "usage",
            "handed_off",
            "tool_calls",
        )
        return {**{k: out.get(k) for k in keep}, "_ms": ms}

    def _job(self, raw: Any) -> dict[str, Any]:
        worker = self.session.worker
        job = worker.submit(raw)
        t0 = time.perf_counter()
        outcome = worker.run_next(job.request_id)
        ms = (time.perf_counter() - t0) * 1000
        if outcome is None and self.background is not None:
            # the arm's background worker took it first (reply mode): its result, once run
            self.background.drain()
            row = self.session.jobs.get(job.request_id)
            if row is not None and row.status == "done":
                return {"request_id": job.request_id, **(row.result or {})}
        if outcome is None:
            return {"request_id": job.request_id, "status": "failed", "error": "not run", "_ms": ms}
        return {**outcome.as_json(), "_ms": ms}

    def _scope(self, raw: Any, what: str) -> ChatScope:
        if not isinstance(raw, dict):
            raise InputError(what, f"must be a JSON object, got {type(raw).__name__}")
        try:
            return ChatScope(
                platform=str(raw.get("platform") or self.settings.default_platform),
                chat_type=raw.get("chat_type"),  # type: ignore[arg-type]
                chat_id=str(raw.get("chat_id") or ""),
            )
        except ValueError as exc:
            raise InputError(what, str(exc)) from None

    def _question(self, raw: Any) -> dict[str, Any]:
        scope = self._scope(raw, "question")
        text = raw.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError("question.text", "required")
        at = raw.get("asked_at")
        asked = parse_timestamp(at, self.settings.tz) if at else datetime.now(self.settings.tz)
        persona = raw.get("persona_id") or self.session.deps.persona_for(
            scope.platform, scope.chat_type, scope.chat_id
        )
        query = EventQuery.asked(
            text,
            asked,
            platform=scope.platform,
            chat_type=scope.chat_type,
            chat_id=scope.chat_id,
            persona_id=str(persona),
            top_k=self.top_k,
            asker_id=None if raw.get("user_id") is None else str(raw["user_id"]),
            asker_name=str(raw.get("user_name") or ""),
        )
        t0 = time.perf_counter()
        hits = self.session.deps.events.search(query)
        ms = (time.perf_counter() - t0) * 1000
        return {"ids": [h.event.id for h in hits], "texts": [h.event.text for h in hits], "_ms": ms}

    def _profile(self, raw: Any) -> dict[str, Any]:
        scope = self._scope(raw, "profile")
        user_id = raw.get("user_id")
        if not isinstance(user_id, str | int) or not str(user_id):
            raise InputError("profile.user_id", "required")
        deps = self.session.deps
        view = profile_view(deps.profiles, str(user_id), scope, deps.limits.profile_sharing)
        facts: dict[str, list[str]] = {}
        for fact in view.key_facts:
            facts.setdefault(fact["type"], []).append(fact["value"])
        return {"facts": facts, "preferences": view.preference_keywords}
