"""The bridge's own Prometheus metrics (``/metrics`` on its port, behind its access token
or the bot's API key): which accounts are connected, and what came in and went out."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector


@dataclass(frozen=True)
class BridgeFigures:
    bot: str
    connected: tuple[str, ...]  # self ids with a live connection
    received: int  # message events journaled (each once)
    answered: int  # decided by the brain
    sent: int  # answers the implementation confirmed
    skipped: int  # malformed or refused
    backlog: int  # journaled or arriving, not answered yet


class _Collector(Collector):
    def __init__(self, figures: BridgeFigures) -> None:
        self.f = figures

    def collect(self) -> Iterator[Any]:
        f, bot = self.f, [self.f.bot]
        up = GaugeMetricFamily("groupmind_bridge_connected", "a OneBot account connected",
                               labels=["bot", "self_id"])  # fmt: skip
        for self_id in f.connected:
            up.add_metric([f.bot, self_id], 1.0)
        yield up
        for name, value, what in (
            ("groupmind_bridge_messages", f.received, "message events received and journaled"),
            ("groupmind_bridge_answered", f.answered, "messages the brain decided on"),
            ("groupmind_bridge_sent", f.sent, "answers the implementation confirmed"),
            ("groupmind_bridge_skipped", f.skipped, "malformed or refused events"),
        ):
            counter = CounterMetricFamily(name, what, labels=["bot"])
            counter.add_metric(bot, value)
            yield counter
        backlog = GaugeMetricFamily("groupmind_bridge_backlog", "not answered yet", labels=["bot"])
        backlog.add_metric(bot, f.backlog)
        yield backlog


def exposition(figures: BridgeFigures) -> str:
    registry = CollectorRegistry()
    registry.register(_Collector(figures))
    return generate_latest(registry).decode()
