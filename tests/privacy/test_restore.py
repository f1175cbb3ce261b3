"""The way back: JSON responses and streams, tool-call arguments included."""

from __future__ import annotations

import json

from privacy.restore import Restorer
from privacy.stream import RestoringStream

VALUES = {"[PHONE_001]": "+1 (415) 555-0132", "[PERSON_002]": 'Maria "M" Gonzalez', "[EMAIL_ADDRESS_001]": "a@b.io"}


def test_text_tolerates_echo_variants():
    r = Restorer(VALUES)
    text = "[PHONE_001] [phone_1] [ PHONE_001 ] \\[PERSON\\_002\\] PERSON_002 [PERSON_009] MYPERSON_002"
    assert r.text(text) == ('+1 (415) 555-0132 +1 (415) 555-0132 +1 (415) 555-0132 Maria "M" Gonzalez '
                            'Maria "M" Gonzalez [PERSON_009] MYPERSON_002')


def test_response_restores_content_reasoning_and_json_arguments():
    r = Restorer(VALUES)
    response = {"choices": [{"message": {"content": "Hi [PERSON_002]", "reasoning_content": "use [PHONE_001]",
                                         "tool_calls": [{"id": "c", "function": {
                                             "name": "call", "arguments": '{"who": "[PERSON_002]"}'}}]}}]}
    out = r.response(response)["choices"][0]["message"]
    assert out["content"] == 'Hi Maria "M" Gonzalez' and out["reasoning_content"] == "use +1 (415) 555-0132"
    assert json.loads(out["tool_calls"][0]["function"]["arguments"]) == {"who": 'Maria "M" Gonzalez'}
    assert response["choices"][0]["message"]["content"] == "Hi [PERSON_002]"  # not mutated


def _chunk(delta, finish=None):
    return {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                       "finish_reason": finish}]}


def _run(pieces, *, tool=False, size=3):
    stream = RestoringStream(Restorer(VALUES))
    out = []
    text = "".join(pieces)
    for i in range(0, len(text), size):
        piece = text[i:i + size]
        delta = ({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]} if tool else {"content": piece})
        out += stream.feed(_chunk(delta))
    out += stream.feed(_chunk({}, "stop"))
    out += stream.flush()
    return out


def _joined(chunks, tool=False):
    parts = []
    for c in chunks:
        delta = c["choices"][0]["delta"]
        if tool:
            parts += [t["function"].get("arguments") or "" for t in delta.get("tool_calls") or ()]
        else:
            parts.append(delta.get("content") or "")
    return "".join(parts)


def test_stream_restores_split_placeholders_and_holds_back_little():
    chunks = _run(["Call [PHONE_001] or mail [EMAIL_ADDRESS_001] now [x] P"])
    assert _joined(chunks) == "Call +1 (415) 555-0132 or mail a@b.io now [x] P"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    restorer = Restorer(VALUES)
    assert restorer.held_from("a long sentence without any bracket", "") == len("a long sentence without any bracket")
    buffer = "text [EMAIL_ADD"
    assert len(buffer) - restorer.held_from(buffer, "") <= restorer.max_len


def test_stream_restores_tool_call_arguments_json_escaped():
    chunks = _run(['{"who": "[PERSON_002]", "tel": "[PHONE_001]"}'], tool=True, size=4)
    assert json.loads(_joined(chunks, tool=True)) == {"who": 'Maria "M" Gonzalez', "tel": "+1 (415) 555-0132"}


def test_stream_passes_through_without_placeholders():
    stream = RestoringStream(Restorer({}))
    chunk = _chunk({"content": "[PHONE_001"})
    assert stream.feed(chunk) == [chunk] and stream.flush() == []
