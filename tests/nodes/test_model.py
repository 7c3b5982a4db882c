"""nodes/model.py alone: tool calls written as text, the structured-output policy."""

from __future__ import annotations

from nodes.model import StructuredOutput, looks_structured, text_tool_calls

NAMES = {"search_events", "get_profile"}


def test_tool_calls_written_as_text_are_recognised() -> None:
    fenced = '```json\n{"name": "search_events", "arguments": {"query": "北京"}}\n```'
    tagged = '<tool_call>\n{"name": "get_profile", "arguments": "{\\"target_id\\": \\"1\\"}"}\n</tool_call>'
    listed = '[{"function": {"name": "search_events", "parameters": {"query": "x"}}}]'
    assert [(c["name"], c["args"]) for c in text_tool_calls(fenced, NAMES)] == [
        ("search_events", {"query": "北京"})
    ]
    assert text_tool_calls(tagged, NAMES)[0]["args"] == {"target_id": "1"}
    assert text_tool_calls(listed, NAMES)[0]["name"] == "search_events"
    assert text_tool_calls('{"name": "rm_rf", "arguments": {}}', NAMES) == []  # not offered
    assert text_tool_calls("好的，我查一下北京的天气", NAMES) == []


def test_payloads_are_not_messages() -> None:
    assert looks_structured('{"a": 1}') and looks_structured("<tool_response>\n{}")
    assert looks_structured('```json\n{"note": "x"}\n```')
    assert not looks_structured("```python\nprint(1)\n```")  # code asked for in a chat
    assert not looks_structured("好的 {笑}") and not looks_structured("[图片] 哈哈")


def test_auto_starts_at_what_worked_and_skips_what_was_refused() -> None:
    policy = StructuredOutput()
    assert policy.order() == ["json_schema", "function_calling", "json_mode"]
    policy.record("json_schema", ok=False)
    assert policy.order() == ["function_calling", "json_mode"]
    policy.record("json_mode", ok=True)
    assert policy.order() == ["json_mode"]
    assert StructuredOutput(mode="function_calling").order() == ["function_calling"]
