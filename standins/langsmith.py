"""A LangSmith stand-in served on 127.0.0.1 that records everything the ``langsmith``
client sends: datasets and examples, experiments (sessions), runs (multipart or batch,
posted and patched) and feedback. Tests point ``LANGSMITH_ENDPOINT`` at it and assert on
what it received, as they would read it in LangSmith.

It answers what the client needs to go on (``/info`` with a full ``batch_ingest_config``,
or the client's sender thread dies; ids for what it creates; lookups by name) and
records any other request as unknown, answering 404.
"""

from __future__ import annotations

import gzip
import json
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

from standins.serving import loopback

INFO = {
    "version": "0.10.0",
    "license_expiration_time": None,
    "batch_ingest_config": {
        "use_multipart_endpoint": True,
        "scale_up_qsize_trigger": 1000,
        "scale_up_nthreads_limit": 16,
        "scale_down_nempty_trigger": 4,
        "size_limit": 100,
        "size_limit_bytes": 20_971_520,
    },
    "instance_flags": {"zstd_compression_enabled": False},
}


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class LangSmithStandIn:
    url: str = ""
    datasets: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> dataset
    examples: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> example
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> experiment
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> run (post + patches)
    feedback: list[dict[str, Any]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    # --- what tests read -------------------------------------------------------------------

    def experiments(self) -> list[dict[str, Any]]:
        with self.lock:
            return [s for s in self.sessions.values() if s.get("reference_dataset_id")]

    def runs_of(self, session_id: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.runs.values() if str(r.get("session_id")) == session_id]

    def roots(self, name: str | None = None) -> list[dict[str, Any]]:
        """Root runs (no parent), optionally by name."""
        with self.lock:
            return [
                r for r in self.runs.values()
                if not r.get("parent_run_id") and (name is None or r.get("name") == name)
            ]  # fmt: skip

    def metadata(self, run: dict[str, Any]) -> dict[str, Any]:
        return dict((run.get("extra") or {}).get("metadata") or {})

    # --- what the client sends -------------------------------------------------------------

    def run_event(self, kind: str, body: dict[str, Any]) -> None:
        with self.lock:
            run = self.runs.setdefault(str(body["id"]), {})
            for key, value in body.items():
                if (
                    key == "extra"
                    and isinstance(value, dict)
                    and isinstance(run.get("extra"), dict)
                ):
                    merged = dict(run["extra"])
                    merged["metadata"] = {**(run["extra"].get("metadata") or {}),
                                          **(value.get("metadata") or {})}  # fmt: skip
                    merged.update({k: v for k, v in value.items() if k != "metadata"})
                    run["extra"] = merged
                elif value is not None or key not in run:
                    run[key] = value
            run.setdefault("events", []).append(kind)

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> Any:
        parts = [p for p in path.split("/") if p]
        if parts[:1] == ["api"]:  # some clients prefix the API path
            parts = parts[1:]
        if parts[:2] == ["v1", "platform"]:
            parts = parts[2:]
        head = parts[0] if parts else ""
        if method == "GET" and head == "info":
            return INFO
        if head == "datasets":
            return self._datasets(method, parts, query, body)
        if head == "examples":
            return self._examples(method, parts, query, body)
        if head == "sessions":
            return self._sessions(method, parts, query, body)
        if head == "runs":
            return self._runs(method, parts, body)
        if head == "feedback" and method == "POST":
            with self.lock:
                self.feedback.append(body)
            return {"id": body.get("id") or str(uuid.uuid4())}
        raise LookupError(f"{method} {path}")

    def _datasets(
        self, method: str, parts: list[str], query: dict[str, list[str]], body: Any
    ) -> Any:
        with self.lock:
            if method == "POST" and len(parts) == 1:
                did = str(body.get("id") or uuid.uuid4())
                dataset = {**body, "id": did, "created_at": _now(), "modified_at": _now(),
                           "example_count": 0, "session_count": 0, "data_type": "kv"}  # fmt: skip
                self.datasets[did] = dataset
                return dataset
            if method == "GET" and len(parts) == 1:
                names = query.get("name") or query.get("name_contains") or []
                return [d for d in self.datasets.values() if not names or d["name"] in names]
            if len(parts) >= 2 and parts[1] in self.datasets:
                if len(parts) == 3 and parts[2] == "examples" and method == "POST":
                    return self._add_examples(parts[1], body)
                if method == "GET":
                    return self.datasets[parts[1]]
        raise LookupError(f"{method} /{'/'.join(parts)}")

    def _add_examples(self, dataset_id: str, body: Any) -> Any:
        items = body if isinstance(body, list) else body.get("examples", [body])
        ids = []
        for item in items:
            eid = str(item.get("id") or uuid.uuid4())
            self.examples[eid] = {**item, "id": eid, "dataset_id": dataset_id,
                                  "created_at": _now(), "modified_at": _now()}  # fmt: skip
            ids.append(eid)
        return {"example_ids": ids, "count": len(ids)}

    def _examples(
        self, method: str, parts: list[str], query: dict[str, list[str]], body: Any
    ) -> Any:
        with self.lock:
            if method == "POST" and parts[1:] == ["bulk"]:
                items = body if isinstance(body, list) else [body]
                for item in items:
                    self._add_examples(str(item["dataset_id"]), [item])
                return [self.examples[str(i["id"])] for i in items if i.get("id")]
            if method == "POST" and len(parts) == 1:
                self._add_examples(str(body["dataset_id"]), [body])
                return self.examples[str(body["id"])]
            if method == "GET" and len(parts) == 1:
                wanted = set(query.get("dataset", []))
                found = [e for e in self.examples.values() if e["dataset_id"] in wanted]
                offset = int((query.get("offset") or ["0"])[0])
                limit = int((query.get("limit") or ["100"])[0])
                return found[offset : offset + limit]
        raise LookupError(f"{method} /{'/'.join(parts)}")

    def _sessions(
        self, method: str, parts: list[str], query: dict[str, list[str]], body: Any
    ) -> Any:
        with self.lock:
            if method == "POST" and len(parts) == 1:
                sid = str(body.get("id") or uuid.uuid4())
                self.sessions[sid] = {**body, "id": sid, "start_time": _now(),
                                      "tenant_id": str(uuid.UUID(int=0))}  # fmt: skip
                return self.sessions[sid]
            if method == "GET" and len(parts) == 1:
                names = query.get("name") or []
                return [s for s in self.sessions.values() if not names or s.get("name") in names]
            if len(parts) == 2 and parts[1] in self.sessions:
                if method == "PATCH":
                    self.sessions[parts[1]].update(
                        {k: v for k, v in (body or {}).items() if v is not None}
                    )
                return self.sessions[parts[1]]
        raise LookupError(f"{method} /{'/'.join(parts)}")

    def _runs(self, method: str, parts: list[str], body: Any) -> Any:
        if method == "POST" and parts[1:] == ["batch"]:
            for kind in ("post", "patch"):
                for run in body.get(kind) or []:
                    self.run_event(kind, run)
            return {}
        if method == "POST" and len(parts) == 1:
            self.run_event("post", body)
            return {}
        if method == "PATCH" and len(parts) == 2:
            self.run_event("patch", {**body, "id": parts[1]})
            return {}
        raise LookupError(f"{method} /{'/'.join(parts)}")

    def multipart(self, content_type: str, raw: bytes) -> None:
        """``/runs/multipart``: parts named ``post.<id>``, ``patch.<id>``, then
        ``post.<id>.inputs`` / ``.outputs`` / ``.events``..., and ``feedback.<id>``."""
        message = BytesParser(policy=policy.default).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + raw
        )
        pending: dict[tuple[str, str], dict[str, Any]] = {}
        order: list[tuple[str, str]] = []
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition") or ""
            payload = part.get_payload(decode=True) or b"{}"
            if part.get("content-encoding") == "gzip":
                payload = gzip.decompress(payload)
            value = json.loads(payload)
            kind, _, rest = str(name).partition(".")
            run_id, _, sub = rest.partition(".")
            if kind == "feedback":
                with self.lock:
                    self.feedback.append(value)
                continue
            key = (kind, run_id)
            if key not in pending:
                pending[key] = {"id": run_id}
                order.append(key)
            if sub:
                pending[key][sub] = value
            else:
                pending[key].update(value)
        for key in order:
            self.run_event(key[0], pending[key])


@contextmanager
def serve() -> Iterator[LangSmithStandIn]:
    standin = LangSmithStandIn()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            url = urlparse(self.path)
            length = int(self.headers.get("content-length", 0) or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("content-encoding") == "gzip":
                raw = gzip.decompress(raw)
            status, answer = 200, {}
            try:
                if url.path.rstrip("/").endswith("/runs/multipart"):
                    standin.multipart(self.headers.get("content-type", ""), raw)
                    answer = {}
                else:
                    body = json.loads(raw) if raw else {}
                    answer = standin.handle(method, url.path, parse_qs(url.query), body)
            except LookupError as exc:
                with standin.lock:
                    standin.unknown.append(str(exc))
                status, answer = 404, {"detail": "not found (stand-in)"}
            payload = json.dumps(answer, default=str).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:  # noqa: N802 - http.server's names
            self._answer("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._answer("POST")

        def do_PATCH(self) -> None:  # noqa: N802
            self._answer("PATCH")

        def do_PUT(self) -> None:  # noqa: N802
            self._answer("PUT")

        def do_DELETE(self) -> None:  # noqa: N802
            self._answer("DELETE")

        def log_message(self, *args: Any) -> None:
            pass

    with loopback(Handler) as url:
        standin.url = url
        yield standin
