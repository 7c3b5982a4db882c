"""Prometheus metrics for one bot, read from the stores at scrape time: every process of a
deployment (server, workers, bridge) writes there, so the figures are the deployment's,
not one process's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from groupmind.settings import Settings

_HEALTH: dict[str, tuple[float, bool]] = {}  # endpoint -> (checked at, up)
HEALTH_TTL_S = 30.0


def model_up(settings: Settings) -> bool | None:
    """Whether the chat model's endpoint answers (``GET /models``, cached 30 s); None
    without one (the rule variants need none)."""
    base = settings.chat_base_url
    if not settings.chat_model or not base:
        return None
    checked = _HEALTH.get(base)
    if checked is None or time.monotonic() - checked[0] > HEALTH_TTL_S:
        try:
            up = httpx.get(base.rstrip("/") + "/models", timeout=2.0).status_code < 500
        except httpx.HTTPError:
            up = False
        checked = _HEALTH[base] = (time.monotonic(), up)
    return checked[1]


class BotMetrics(Collector):
    def __init__(self, bot: str, status: dict[str, Any], model: bool | None) -> None:
        self.bot, self.status, self.model = bot, status, model

    def collect(self) -> Iterator[Any]:
        s, bot = self.status, [self.bot]
        for name, key, what in (
            ("groupmind_messages", "messages", "users' messages stored"),
            ("groupmind_replies", "replies", "the bot's replies stored"),
        ):
            counter = CounterMetricFamily(name, what, labels=["bot"])
            counter.add_metric(bot, s[key])
            yield counter
        jobs = GaugeMetricFamily(
            "groupmind_memory_jobs", "memory jobs by status", labels=["bot", "status"]
        )
        for status in ("queued", "running", "done", "failed"):
            jobs.add_metric([self.bot, status], s["jobs"].get(status, 0))
        yield jobs
        memories = GaugeMetricFamily("groupmind_memories", "event memories stored", labels=["bot"])
        memories.add_metric(bot, s["memories"])
        yield memories
        if self.model is not None:
            up = GaugeMetricFamily(
                "groupmind_model_up", "the chat model's endpoint answers", labels=["bot"]
            )
            up.add_metric(bot, 1.0 if self.model else 0.0)
            yield up


def exposition(bot: str, status: dict[str, Any], model: bool | None) -> bytes:
    registry = CollectorRegistry()
    registry.register(BotMetrics(bot, status, model))
    return generate_latest(registry)


def bridge_status(url: str, bot: str, key: str | None) -> dict[str, Any]:
    """What a bridge says of itself (its ``/metrics``, asked with the request's key): the
    accounts connected for this bot, messages and backlog; or why it could not say."""
    headers = {"X-Api-Key": key} if key else {}
    try:
        response = httpx.get(url.rstrip("/") + "/metrics", headers=headers, timeout=2.0)
    except httpx.HTTPError as exc:
        return {"url": url, "error": f"unreachable ({type(exc).__name__})"}
    if response.status_code != 200:
        return {"url": url, "error": f"HTTP {response.status_code}"}
    connected, figures = [], {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.labels.get("bot") != bot:
                continue  # another bot's bridge: nothing of it is shown
            if sample.name == "groupmind_bridge_connected" and sample.value:
                connected.append(sample.labels["self_id"])
            elif sample.name.startswith("groupmind_bridge_"):
                figures[sample.name.removeprefix("groupmind_bridge_")] = int(sample.value)
    if not figures:
        return {"url": url, "error": "not this bot's bridge"}
    return {"url": url, "connected": sorted(connected), **figures}
