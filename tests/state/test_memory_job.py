from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from domain.limits import Limits
from state.memory import MemoryJob, MemoryJobInput
from state.validation import describe_validation_error
from tests.conftest import SHANGHAI

JOB: dict[str, Any] = {
    "request_id": "r1",
    "action_summary": "我帮你查了天气",
    "new_info": "我明天去北京",
    "user_id": 42,
    "user_name": "小明",
    "chat_type": "group",
    "chat_id": 1001,
    "chat_name": "技术交流群",
    "persona_id": "default",
    "timestamp": "2026-11-16T10:05:00+08:00",
}


def validate(job: dict[str, Any], limit: int = 4000) -> MemoryJob:
    return MemoryJob.model_validate(
        job, context={"limits": Limits(tz=SHANGHAI, max_text_chars=limit)}
    )


def error_of(job: dict[str, Any], limit: int = 4000) -> str:
    with pytest.raises(ValidationError) as info:
        validate(job, limit)
    return describe_validation_error(info.value)


def test_ids_become_strings_and_time_keeps_its_offset() -> None:
    job = validate(JOB)
    assert (job.user_id, job.chat_id) == ("42", "1001")
    assert job.timestamp == "2026-11-16T10:05:00+08:00"


def test_epoch_seconds_and_naive_times_read_in_the_configured_zone() -> None:
    assert validate({**JOB, "timestamp": 1763258700}).timestamp == "2025-11-16T10:05:00+08:00"
    assert validate({**JOB, "timestamp": "2026-11-16 10:05"}).timestamp.endswith("+08:00")


def test_private_chat_id_defaults_to_the_user() -> None:
    job = validate({**JOB, "chat_type": "private", "chat_id": None})
    assert job.chat_id == "42"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"user_name": None}, "user_name: Input should be a valid string"),
        ({"timestamp": "yesterday"}, "timestamp: unparseable timestamp 'yesterday'"),
        ({"timestamp": 10**12}, "timestamp: epoch seconds"),
        ({"chat_type": "channel"}, "chat_type: unknown chat type 'channel'"),
        ({"chat_id": None}, "chat_id: missing (required for a group chat)"),
        (
            {"chat_type": "private", "chat_id": "99"},
            "chat_id: a private chat's id is the user's id",
        ),
        ({"action_summary": "", "new_info": "  "}, "new_info: empty, and so is action_summary"),
        ({"new_info": "x" * 5000}, "new_info: is 5000 characters, over the limit of 4000"),
        ({"request_id": ""}, "request_id: must not be empty"),
        ({"recent_messages": [{"content": "hi"}]}, "recent_messages.0.user_name: missing"),
    ],
)
def test_bad_jobs_name_the_field_and_the_reason(change: dict[str, Any], expected: str) -> None:
    assert expected in error_of({**JOB, **change})


def test_missing_field_is_named() -> None:
    job = {k: v for k, v in JOB.items() if k != "new_info"}
    assert error_of(job) == "new_info: missing (required)"


def test_the_graph_input_carries_every_job_field() -> None:
    # LangGraph drops input keys its input schema does not name: a job field missing here
    # (the tools' key_facts and impression_update once were) would vanish silently.
    assert set(MemoryJobInput.__annotations__) == set(MemoryJob.model_fields)


def test_a_job_without_a_platform_is_on_the_default_one() -> None:
    assert MemoryJob.model_validate(JOB).platform == "qq"
    ctx = {"limits": Limits(default_platform="lark")}
    with pytest.raises(TypeError, match="limits is a dict, not Limits"):  # no silent fallback
        MemoryJob.model_validate(JOB, context={"limits": {"default_platform": "lark"}})
    assert MemoryJob.model_validate(JOB, context=ctx).platform == "lark"
    on_discord = MemoryJob.model_validate({**JOB, "platform": "discord"}, context=ctx)
    assert on_discord.scope.key == "discord:group:1001"
