"""A bot process for the fault suite: feeds a file of messages through the reply graph
in-process (memory in its background worker), the way a chat platform would: a message
is acknowledged (its index written to the progress file) only once its reply is done, so
after a crash the message in flight is delivered again; a message that fails (a database
restarting) is retried until it goes through. Exits 0 once every message is answered and
every memory job has run; what was said since the last hand-off (kept in the threads'
buffers for the next one) is written beside the progress file, ``pending.json``.

    python -m benchmarks.fault_bot MESSAGES.jsonl PROGRESS_FILE   (settings from GROUPMIND_*)
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from groupmind.chatting import reply_context, reply_to
from groupmind.session import open_session
from groupmind.settings import Settings
from groupmind.threads import thread_config
from state.validation import InputError

log = logging.getLogger("fault_bot")
# "async": every step checkpointed, as on a LangGraph server (a run that fails mid-way
# leaves what it did so far on its thread)
DURABILITY: Any = os.environ.get("FAULT_BOT_DURABILITY", "exit")


def main(messages_path: Path, progress: Path) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    messages = [json.loads(line) for line in messages_path.read_text("utf-8").splitlines()]
    while True:  # the whole start-up: the checkpointer connects on its own too
        try:
            session = open_session(Settings())
            graph = session.reply_graph()
            break
        except Exception as exc:  # noqa: BLE001 - the database may be restarting
            log.warning("start: %s", exc)
            time.sleep(0.5)
    background = session.runtime.start_background_worker()
    context = reply_context(session.deps)
    done = int(progress.read_text()) if progress.exists() else 0
    for index in range(done, len(messages)):
        while True:
            try:
                reply_to(graph, session.deps, messages[index], context, durability=DURABILITY)
                break
            except InputError as exc:  # never retried: it cannot go through
                log.warning("refused: %s", exc)
                break
            except Exception as exc:  # noqa: BLE001 - delivered again, as a platform would
                log.warning("message %d: %s: %s", index, type(exc).__name__, exc)
                time.sleep(0.3)
        progress.with_suffix(".tmp").write_text(str(index + 1))
        progress.with_suffix(".tmp").replace(progress)
    while True:
        try:
            if background.drain(timeout_s=30, retries=True):  # a job failed in the outage too
                break
        except Exception as exc:  # noqa: BLE001 - the queue may be unreachable a moment
            log.warning("drain: %s", exc)
            time.sleep(0.5)
    background.stop()
    # Said since the last hand-off: kept in the threads, remembered at the next one.
    streams = {f"{m['platform']}:{m['chat_type']}:{m['chat_id']}" for m in messages}
    waiting = [
        p["content"]
        for stream in sorted(streams)
        for p in graph.get_state(thread_config(stream, session.deps.limits.bot_id)).values.get(
            "pending", []
        )
    ]
    progress.with_name("pending.json").write_text(json.dumps(waiting, ensure_ascii=False))
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
