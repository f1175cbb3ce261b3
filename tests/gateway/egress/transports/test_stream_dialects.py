"""Upstreams that stream OpenAI's shape sloppily (no ``id``, no ``finish_reason``, then ``[DONE]``) give complete
answers on every surface, every chunk of one response carries one ``id``, and a stream that really breaks still
ends with an error event. The cloud path (through litellm and through the own OpenAI-compatible transport) and the
edge path (aiohttp), all against a double on loopback that speaks the sloppy dialect
(``ModelServer(dialect="sloppy")``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.model_server import ModelServer, Reply, ToolCall
from tests.fakes.threaded import ThreadedServer
from tests.streams import sse_events

READ_TOOL = {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                              "parameters": {"type": "object",
                                                             "properties": {"path": {"type": "string"}}}}}


@pytest.fixture(scope="module")
def _sloppy() -> Iterator[tuple[ModelServer, str]]:
    fake = ModelServer("sloppy", model="gpt-test", dialect="sloppy")
    with ThreadedServer(fake.app) as server:
        yield fake, server.url


@pytest.fixture()
def sloppy(_sloppy: tuple[ModelServer, str]) -> ModelServer:
    fake, url = _sloppy
    fake.reset()
    fake.url = url  # type: ignore[attr-defined]
    return fake


SIDES = ["cloud", "cloud-openai", "edge"]  # the cloud through litellm and through the own transport


def _gateway(start_gateway: Any, sloppy: ModelServer, side: str) -> Any:
    url = sloppy.url + "/v1"  # type: ignore[attr-defined]
    if side.startswith("cloud"):
        transport = "openai" if side == "cloud-openai" else "litellm"
        return start_gateway(cloud={"api_base": url, "transport": transport}, policy={"default": "cloud-only"})
    return start_gateway(edge={"base_url": url}, policy={"default": "edge-only"})


def _chat(gw: Any, **extra: Any) -> list[tuple[str | None, Any]]:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}], **extra}
    with httpx.stream("POST", gw.base_url + "/chat/completions", json=body, timeout=30) as response:
        assert response.status_code == 200, response.read()
        return sse_events(response)


@pytest.mark.parametrize("side", SIDES)
def test_chat_stream_without_finish_reason_or_ids_is_complete_with_one_id(start_gateway, sloppy, side):
    gw = _gateway(start_gateway, sloppy, side)
    sloppy.script(Reply(content="alpha beta gamma"))
    events = _chat(gw, stream_options={"include_usage": True})
    assert events[-1] == (None, "[DONE]"), events
    chunks = [data for _, data in events[:-1]]
    assert not any("error" in c for c in chunks), chunks
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
    assert text == "alpha beta gamma"
    finishes = [ch["finish_reason"] for c in chunks for ch in c.get("choices") or () if ch.get("finish_reason")]
    assert finishes == ["stop"]
    ids = {c.get("id") for c in chunks}
    assert len(ids) == 1 and next(iter(ids)), ids
    assert gw.meter.calls[-1].status == 200
    assert chunks[-1]["usage"]["completion_tokens"] == 3 and not chunks[-1]["choices"]  # usage stays last


@pytest.mark.parametrize("side", SIDES)
def test_chat_stream_of_tool_calls_without_finish_reason_finishes_with_tool_calls(start_gateway, sloppy, side):
    gw = _gateway(start_gateway, sloppy, side)
    sloppy.script(Reply(content=None, tool_calls=[ToolCall("read_file", '{"path": "notes.md"}', id="call_1")]))
    events = _chat(gw, tools=[READ_TOOL])
    assert events[-1] == (None, "[DONE]"), events
    chunks = [data for _, data in events[:-1]]
    arguments = "".join(call["function"].get("arguments") or "" for c in chunks for ch in c["choices"]
                        for call in ch["delta"].get("tool_calls") or ())
    assert json.loads(arguments) == {"path": "notes.md"}
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch.get("finish_reason")]
    assert finishes == ["tool_calls"]
    assert len({c["id"] for c in chunks}) == 1


@pytest.mark.parametrize("side", SIDES)
def test_responses_stream_from_a_sloppy_upstream_completes(start_gateway, sloppy, side):
    gw = _gateway(start_gateway, sloppy, side)
    sloppy.script(Reply(content="alpha beta"))
    body = {"model": "m", "stream": True, "input": "hi"}
    with httpx.stream("POST", gw.base_url + "/responses", json=body, timeout=30) as response:
        events = sse_events(response)
    names = [name for name, _ in events]
    assert names[-1] == "response.completed" and "error" not in names and "response.failed" not in names, names
    final = events[-1][1]["response"]
    assert final["status"] == "completed"
    assert final["output"][-1]["content"][0]["text"] == "alpha beta"


@pytest.mark.parametrize("side", SIDES)
def test_messages_stream_from_a_sloppy_upstream_ends_its_turn(start_gateway, sloppy, side):
    gw = _gateway(start_gateway, sloppy, side)
    sloppy.script(Reply(content="alpha beta"))
    body = {"model": "m", "stream": True, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream("POST", gw.base_url + "/messages", json=body, timeout=30) as response:
        events = sse_events(response)
    names = [name for name, _ in events]
    assert names[-1] == "message_stop" and "error" not in names, names
    delta = next(data for name, data in events if name == "message_delta")
    assert delta["delta"]["stop_reason"] == "end_turn"
    text = "".join(data["delta"].get("text", "") for name, data in events if name == "content_block_delta")
    assert text == "alpha beta"


BREAKS = [("cloud", "reset"), ("cloud", "error"), ("cloud-openai", "reset"), ("cloud-openai", "error"),
          ("cloud-openai", "eof"), ("edge", "reset"), ("edge", "error"), ("edge", "eof")]


@pytest.mark.parametrize(("side", "how"), BREAKS)
def test_a_stream_that_really_breaks_still_ends_in_an_error_event_on_every_surface(start_gateway, sloppy, side,
                                                                                     how):
    """Through litellm a body that ends cleanly cannot be told from ``[DONE]`` (the OpenAI SDK under it stops at
    either), so there a break is a dropped connection or an error event; the edge path and the own cloud transport
    also see a missing ``[DONE]``."""
    gw = _gateway(start_gateway, sloppy, side)
    if side == "cloud":
        gw.settings.cloud.max_retries = 0
    for surface, body in (
        ("chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
        ("responses", {"input": "hi"}),
        ("messages", {"max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}),
    ):
        sloppy.script(Reply(content="one two three four", break_after=2, break_how=how))
        with httpx.stream("POST", gw.base_url + "/" + surface, json={"model": "m", "stream": True, **body},
                          timeout=30) as response:
            assert response.status_code == 200
            events = sse_events(response)
        names = [name for name, _ in events]
        last = events[-1][1]
        if surface == "chat/completions":
            assert last != "[DONE]" and "error" in last, events
        elif surface == "responses":
            assert names[-2:] == ["error", "response.failed"], names
        else:
            assert names[-1] == "error" and "message_stop" not in names, names
        assert gw.meter.calls[-1].status == 502
