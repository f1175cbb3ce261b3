"""step-routing against the real SmolLM2 edge (llama-cpp-python, started by `make test`): the entropy the
policy computes from the real top-20 logprobs equals a hand computation on the same greedy response."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tests.conftest import RunningGateway
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.real_parts import LLAMA_COMPAT
from tests.real_parts import llama_url as real_llama_url
from tests.router.policies.helpers import ask, purposes

pytestmark = pytest.mark.real_model

MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture()
def llama_url() -> str:
    return real_llama_url().rstrip("/")


def _gateway(start: Callable[..., RunningGateway], url: str, **knobs: Any) -> RunningGateway:
    return start(edge={"base_url": url, "model": "smollm2", "read_timeout_s": 120, "compat": LLAMA_COMPAT},
                 policy={"default": "step-routing", "knobs": {"step-routing": knobs}},
                 sessions={"store": "memory"})


class RecordingProxy:
    """Forwards non-streaming chat completions to the real server and keeps each (request, response) pair,
    so the test can check the policy against the very response it received."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.exchanges: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        async with httpx.AsyncClient(timeout=120) as client:
            upstream = await client.post(self.target + "/chat/completions", json=body)
        self.exchanges.append((body, upstream.json()))
        return Response(upstream.content, status_code=upstream.status_code, media_type="application/json")


def _hand_entropy(top_logprobs: list[dict[str, Any]]) -> float:
    weights = [math.exp(t["logprob"]) for t in top_logprobs]
    total = sum(weights)
    return -sum((w / total) * math.log(w / total) for w in weights)


def test_probe_entropy_matches_hand_computation(start_gateway: Callable[..., RunningGateway], llama_url: str,
                                                cloud: ModelServer) -> None:
    proxy = RecordingProxy(llama_url)
    with ThreadedServer(proxy.app) as server:
        gw = _gateway(start_gateway, server.url + "/v1", mode="probe", tau=100.0)
        answer = ask(gw, MESSAGES, stream=False, session="real-probe", max_tokens=8)
    assert answer.headers["x-ecgw-route"] == "edge" and answer.content
    assert purposes(gw.meter) == [("edge", "probe"), ("edge", "step")]
    probe, response = proxy.exchanges[0]
    assert (probe["max_tokens"], probe["temperature"], probe["logprobs"], probe["top_logprobs"]) == (1, 0, True, 20)
    first = response["choices"][0]["logprobs"]["content"][0]
    assert len(first["top_logprobs"]) == 20
    expected = _hand_entropy(first["top_logprobs"])
    assert 0.0 < expected < math.log(20)
    state: Any = asyncio.run(gw.services.sessions.get("real-probe", "step_routing"))
    assert state["last"]["entropy"] == pytest.approx(expected, rel=1e-12)
    assert state["last"]["reason"] == "entropy" and state["last"]["side"] == "edge"


@pytest.mark.parametrize("stream", [False, True])
def test_inline_on_the_real_edge(start_gateway: Callable[..., RunningGateway], llama_url: str, cloud: ModelServer,
                                 stream: bool) -> None:
    stay = _gateway(start_gateway, llama_url, mode="inline", tau=100.0)
    answer = ask(stay, MESSAGES, stream=stream, session="real-inline", max_tokens=8)
    assert answer.headers["x-ecgw-route"] == "edge" and answer.content
    assert purposes(stay.meter) == [("edge", "step")]
    cloud.script(Reply("Paris."))
    escalate = _gateway(start_gateway, llama_url, mode="inline", tau=0.0)
    answer = ask(escalate, MESSAGES, stream=stream, session="real-inline-2", max_tokens=8)
    assert answer.content == "Paris."
    assert purposes(escalate.meter) == [("edge", "step"), ("cloud", "step")]
