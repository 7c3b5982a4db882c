"""groupmind's memory for a bot framework that keeps its own model (docs/integrations.md):
``HostMemory`` captures every message, recalls what memory holds for one the host is
about to answer (within a time budget), records the host's answer and runs groupmind's
tools, all through groupmind's LangGraph API with the bot's own key. What it could not
deliver waits in an ``Outbox`` on disk and goes when groupmind is back, in order."""

from groupmind_host.ids import stream_key, thread_id
from groupmind_host.memory import HostMemory, Recall
from groupmind_host.outbox import Outbox

__all__ = ["HostMemory", "Outbox", "Recall", "stream_key", "thread_id"]
