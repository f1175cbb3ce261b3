"""What a channel reports for token estimation when an upstream gives no usage: every generated field."""

from __future__ import annotations

from router.channels import _chunk_text, _completion_text


def test_output_text_counts_content_reasoning_in_both_spellings_and_tool_calls():
    response = {"choices": [{"message": {
        "content": "answer", "reasoning": "vllm-style thought", "reasoning_content": "deepseek-style thought",
        "tool_calls": [{"function": {"name": "read", "arguments": '{"path": "a"}'}}]}}]}
    text = _completion_text(response)
    for piece in ("answer", "vllm-style thought", "deepseek-style thought", "read", '{"path": "a"}'):
        assert piece in text


def test_stream_text_collects_the_same_fields():
    parts: list[str] = []
    for delta in ({"reasoning": "think "}, {"content": "hi"},
                  {"tool_calls": [{"index": 0, "function": {"name": "ls", "arguments": "{}"}}]}):
        _chunk_text({"choices": [{"delta": delta}]}, parts)
    assert "".join(parts) == "think hils{}"
