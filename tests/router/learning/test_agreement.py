"""The agreement rule (router/learning/agreement.py) on real tool-call shapes: OpenAI's, vLLM's (double-encoded
arguments, ``content: ""`` beside tool calls), DeepSeek's, and plain text answers."""

from __future__ import annotations

import json
from typing import Any

from router.learning.agreement import TEXT_THRESHOLD, agreement, answer_of, token_f1


def _completion(content: str | None = None, *calls: tuple[str, str]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                                 for i, (n, a) in enumerate(calls)]
    return {"id": "chatcmpl-1", "object": "chat.completion", "choices": [
        {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}]}


def test_equivalent_arguments_agree() -> None:
    openai = _completion(None, ("exec", '{"command": "ls -la /tmp_workspace", "timeout": 30}'))
    vllm = _completion("", ("exec", json.dumps(json.dumps({"timeout": 30.0, "command": "ls  -la /tmp_workspace "}))))
    deepseek = _completion(None, ("exec", '{"timeout":30,"command":"ls -la /tmp_workspace","cwd":null}'))
    assert agreement(answer_of(openai), answer_of(vllm)).agree
    assert agreement(answer_of(openai), answer_of(deepseek)).as_record() == {"agree": True, "kind": "tool",
                                                                            "similarity": 1.0}


def test_different_tools_values_or_order_disagree() -> None:
    base = _completion(None, ("read", '{"path": "a.txt"}'), ("read", '{"path": "b.txt"}'))
    for other in (_completion(None, ("write", '{"path": "a.txt"}'), ("read", '{"path": "b.txt"}')),
                  _completion(None, ("read", '{"path": "a.txt"}'), ("read", '{"path": "c.txt"}')),
                  _completion(None, ("read", '{"path": "b.txt"}'), ("read", '{"path": "a.txt"}')),
                  _completion(None, ("read", '{"path": "a.txt"}')),
                  _completion("I read a.txt and b.txt")):
        label = agreement(answer_of(base), answer_of(other))
        assert not label.agree and label.kind == "tool"
    broken = _completion(None, ("read", '{"path": "a.txt"'))  # not JSON: compared as normalised text
    assert agreement(answer_of(broken), answer_of(_completion(None, ("read", ' {"path": "a.txt" ')))).agree


def test_text_answers_agree_above_the_threshold() -> None:
    done = answer_of(_completion("Done: the report is written to out/report.md."))
    same = answer_of(_completion("done — the report is written to out/report.md"))
    other = answer_of(_completion("I could not find the input file."))
    assert agreement(done, same).agree and agreement(done, same).similarity == 1.0
    assert not agreement(done, other).agree
    assert agreement(answer_of(_completion("")), answer_of(_completion(None))).agree
    assert abs(token_f1("a b c d", "a b x y") - 0.5) < 1e-9 and TEXT_THRESHOLD == 0.5
