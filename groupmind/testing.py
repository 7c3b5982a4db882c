"""A contract test kit for variants: what a plugin's tests run to know its variant keeps
its slot's contract on real states (docs/variants.md).

    from groupmind.testing import check_variant

    def test_my_ranker_keeps_the_contract(tmp_path):
        outputs = check_variant("rank_context", rank_keywords, data_dir=tmp_path)
        assert any(out["context_ids"] for out in outputs)

``check_variant`` checks the function as the registry will (parameters, the slot's
``<Slot>Writes`` as its return type), then runs a throwaway deployment (SQLite, Chroma and
the bundled embeddings in ``data_dir``) and feeds it a small chat (or your ``messages``,
or memory ``jobs``), stopping every run right before the slot: the variant is called on
each of those states, as the graph would call it, and what it returns is checked against
the contract. A problem raises ``ContractError`` naming the slot, the state and what is
wrong; otherwise you get every output, to assert on what it should do.
"""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from graphs.memory import build_memory_graph
from graphs.reply import build_reply_graph
from groupmind.session import open_session
from groupmind.settings import Settings
from groupmind.threads import thread_config
from nodes.deps import Deps
from nodes.variants import VariantFn, contract_problems, output_problems, registry
from state.context import Context
from state.slots import SLOTS

T0 = 1_763_258_400  # 2025-11-16 10:00 +08:00: the sample chat's first message
SAMPLE_CHAT: list[dict[str, Any]] = [
    {"message_id": "s1", "user_id": "u1", "user_name": "小明",
     "content": "大家早，我下周三要去北京出差"},
    {"message_id": "s2", "user_id": "u2", "user_name": "阿强", "content": "小明: 去几天？",
     "reply_to": "s1", "mentions": ["u1"]},
    {"message_id": "s3", "user_id": "u1", "user_name": "小明", "content": "三天，顺便见个老同学",
     "reply_to": "s2"},
    {"message_id": "s4", "user_id": "u3", "user_name": "莉莉", "content": "@bot 北京最近冷吗？",
     "mentions": ["bot"]},
    {"message_id": "s5", "user_id": "u1", "user_name": "小明",
     "content": "@bot 帮我记一下，我的生日是11月23日", "mentions": ["bot"]},
]  # fmt: skip
SAMPLE_JOBS: list[dict[str, Any]] = [
    {"request_id": "j1", "action_summary": "我帮你查了明天去北京的高铁",
     "new_info": "我下周三要去北京出差", "user_id": "u1", "user_name": "小明",
     "new_info_by": "user"},
    {"request_id": "j2", "action_summary": "", "new_info": "我在杭州做后端程序员，养了一只猫",
     "user_id": "u2", "user_name": "阿强", "new_info_by": "user"},
    {"request_id": "j3", "action_summary": "我提醒了他带伞", "new_info": "他昨天说今天要下雨",
     "user_id": "u3", "user_name": "莉莉", "new_info_by": "user",
     "recent_messages": [{"user_name": "小明", "user_id": "u1", "content": "今天要下雨"}]},
]  # fmt: skip


class ContractError(AssertionError):
    """A variant that does not keep its slot's contract."""


def sample_messages() -> list[dict[str, Any]]:
    """The sample chat as input messages (a group on qq, a minute apart)."""
    return [
        {"platform": "qq", "chat_type": "group", "chat_id": "9001", "chat_name": "测试群",
         "timestamp": T0 + 60 * n, **m}
        for n, m in enumerate(SAMPLE_CHAT)
    ]  # fmt: skip


def sample_jobs() -> list[dict[str, Any]]:
    return [
        {"platform": "qq", "chat_type": "group", "chat_id": "9001", "chat_name": "测试群",
         "persona_id": "default", "timestamp": T0 + 600 * n, **j}
        for n, j in enumerate(SAMPLE_JOBS)
    ]  # fmt: skip


def states_before(
    slot: str,
    *,
    data_dir: Path | None = None,
    messages: Sequence[Mapping[str, Any]] | None = None,
    jobs: Sequence[Mapping[str, Any]] | None = None,
    variants: Mapping[str, str] | None = None,
) -> tuple[Deps, list[dict[str, Any]]]:
    """The deployment's deps and the graph's state right before ``slot``, once per run that
    reached it (each run then goes on to its end, so later states are as a chat has them)."""
    contract = SLOTS.get(slot)
    if contract is None:
        raise ContractError(f"{slot!r} is no slot (slots: {', '.join(SLOTS)})")
    if contract.graph == "forget":
        raise ContractError("erase runs once per request: test it through the forget graph")
    folder = data_dir or Path(tempfile.mkdtemp(prefix="groupmind-contract-"))
    session = open_session(Settings(_env_file=None, data_dir=folder))  # type: ignore[call-arg]
    deps, context = session.deps, Context(variants=dict(variants or {}))
    saver = InMemorySaver()
    states: list[dict[str, Any]] = []
    if contract.graph == "reply":
        graph: Any = build_reply_graph(deps, checkpointer=saver)
        items: list[tuple[dict[str, Any], Any]] = []
        for raw in messages if messages is not None else sample_messages():
            stream = f"{raw['platform']}:{raw['chat_type']}:{raw.get('chat_id') or raw['user_id']}"
            items.append(({"message": dict(raw)}, thread_config(stream, deps.limits.bot_id)))
    else:
        graph = build_memory_graph(deps, checkpointer=saver)
        items = [(dict(job), {"configurable": {"thread_id": f"job-{job['request_id']}"}})
                 for job in (jobs if jobs is not None else sample_jobs())]  # fmt: skip
    for value, config in items:
        graph.invoke(value, config, context=context, interrupt_before=[slot])
        snapshot = graph.get_state(config)
        while snapshot.next:  # stopped before the slot, once or again (a loop, a re-plan)
            if slot in snapshot.next:
                states.append(dict(snapshot.values))
            graph.invoke(None, config, context=context, interrupt_before=[slot])
            snapshot = graph.get_state(config)
    return deps, states


def check_variant(
    slot: str,
    fn: VariantFn,
    *,
    data_dir: Path | None = None,
    messages: Sequence[Mapping[str, Any]] | None = None,
    jobs: Sequence[Mapping[str, Any]] | None = None,
    context: Context | None = None,
) -> list[dict[str, Any]]:
    """Check ``fn`` as a variant of ``slot`` (module docstring); its outputs, one per state."""
    contract = SLOTS.get(slot)
    if contract is None:
        raise ContractError(f"{slot!r} is no slot (slots: {', '.join(SLOTS)})")
    problems = contract_problems(contract, fn)
    if problems:
        raise ContractError(f"variants.{slot}: " + "; ".join(problems))
    deps, states = states_before(slot, data_dir=data_dir, messages=messages, jobs=jobs)
    if not states:
        raise ContractError(f"no run reached {slot}: give messages or jobs that do")
    outputs = []
    for n, state in enumerate(states, start=1):
        out = fn(state, context or Context(), deps)
        if inspect.isawaitable(out):
            raise ContractError(f"variants.{slot}: returned an awaitable from a sync slot")
        problems = output_problems(contract, out)
        if problems:
            raise ContractError(
                f"variants.{slot}: on state {n} of {len(states)}: " + "; ".join(problems)
            )
        outputs.append(out)
    return outputs


def installed(slot: str) -> dict[str, str]:
    """Variant name -> where it came from (``groupmind``, or a plugin's entry point)."""
    reg = registry()
    return {name: reg.sources[slot, name] for name in reg.variants.get(slot, {})}
