"""The edge's stream relayed as bytes (``gateway.egress.transports.relay``): an event that meets the stream guarantees goes
out as the server wrote it; one that does not is repaired as the chunk path repairs it; metering reads every chunk."""

from __future__ import annotations

import json

import httpx
import pytest

from gateway.egress.transports.relay import SSERelay
from router.errors import UpstreamError
from tests.fakes.model_server import Reply


def _event(data: dict) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"  # the spaced JSON a server writes, not orjson's


def _chunk(content: str | None = None, finish: str | None = None, **extra) -> dict:
    delta = {"content": content} if content is not None else {}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


USAGE = {"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}


def _datas(raw: bytes) -> list[bytes]:
    return [line[6:] for line in raw.split(b"\n") if line.startswith(b"data: ")]


def test_a_conformant_stream_goes_out_as_the_server_wrote_it_and_usage_only_when_asked():
    body = _event(_chunk("a")) + _event(_chunk("b")) + _event(_chunk(finish="stop")) + _event(USAGE)
    for usage in (False, True):
        relay = SSERelay(usage=usage)
        first = relay.feed(body + b"data: [DONE]\n\n")
        last = relay.close()
        assert relay.done
        sent = first.data + last.data
        expected = body if usage else body[:body.index(b"data: {\"id\": \"chatcmpl-1\", \"choices\": []")]
        assert sent == expected + b"data: [DONE]\n\n"
        assert [c.get("usage") for c in first.chunks + last.chunks][-1] == USAGE["usage"]  # metered either way


def test_events_cut_across_pieces_wait_for_their_line_end():
    raw = _event(_chunk("hello")) + _event(_chunk(finish="stop")) + b"data: [DONE]\n\n"
    relay = SSERelay(usage=False)
    pieces = [relay.feed(raw[i:i + 7]) for i in range(0, len(raw), 7)]
    out = b"".join(p.data for p in pieces) + relay.close().data
    assert out == raw
    assert sum(len(p.chunks) for p in pieces) == 2


def test_a_sloppy_stream_is_repaired_one_id_indexed_finished_usage_last():
    relay = SSERelay(usage=True)
    sloppy = (_event({"choices": [{"delta": {"content": "x"}}]})
              + _event({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
              + _event({"id": "other", "choices": [{"index": 0, "delta": {"content": "y"}}]}) + b"data: [DONE]\n\n")
    out = relay.feed(sloppy).data + relay.close().data
    chunks = [json.loads(d) for d in _datas(out) if d != b"[DONE]"]
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert chunks[0]["choices"][0]["index"] == 0
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"  # added, before the usage chunk
    assert chunks[-1]["usage"] == {"prompt_tokens": 1, "completion_tokens": 1} and chunks[-1]["choices"] == []
    assert out.endswith(b"data: [DONE]\n\n")


def test_an_error_event_breaks_the_stream_after_the_events_before_it():
    relay = SSERelay(usage=False)
    piece = relay.feed(_event(_chunk("a")) + b'data: {"error": {"message": "crashed"}}\n\n' + _event(_chunk("b")))
    assert _datas(piece.data) == [json.dumps(_chunk("a")).encode()]
    assert isinstance(relay.failure, UpstreamError) and "crashed" in relay.failure.message


def test_a_body_that_ends_without_a_line_end_or_done_is_whole_when_every_choice_finished():
    relay = SSERelay(usage=False)
    relay.feed(_event(_chunk("a")) + b"data: " + json.dumps(_chunk(finish="stop")).encode())
    assert not relay.finished
    assert len(relay.rest().chunks) == 1 and relay.finished


@pytest.mark.parametrize("include_usage", [False, True])
def test_an_edge_only_stream_reaches_the_client_as_the_edge_wrote_its_events(gateway, edge, include_usage):
    edge.script(Reply(content="one two three"))
    body = {"model": "ecgw/edge-only", "stream": True, "messages": [{"role": "user", "content": "count"}]}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    with httpx.stream("POST", gateway.base_url + "/chat/completions", json=body, timeout=30) as response:
        raw = response.read()
    datas = _datas(raw)
    assert datas[-1] == b"[DONE]"
    chunks = [json.loads(d) for d in datas[:-1]]
    assert all(b'"choices": [' in d for d in datas[:-1])  # the edge's own JSON, not parsed and serialised again
    assert len({c["id"] for c in chunks}) == 1
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "one two three"
    assert (chunks[-1].get("usage") is not None) is include_usage
    call = gateway.meter.calls[-1]
    assert call.status == 200 and call.streamed and call.usage is not None and call.output_text == "one two three"
