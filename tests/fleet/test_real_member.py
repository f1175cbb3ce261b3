"""A real model server as one member of the edge pool, a stub beside it: affinity, the retry before the first
byte, and metering by deployment hold with a server the gateway did not write (SmolLM2 on llama-cpp; the vLLM
variant is tests/real/test_vllm_pool.py)."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes.model_server import Reply
from tests.fleet.conftest import deployment, session_on
from tests.real_parts import LLAMA_COMPAT, llama_url

pytestmark = pytest.mark.real_model


def _chat(gw, session: str, *, stream: bool = False) -> httpx.Response:
    return httpx.post(gw.base_url + "/chat/completions", headers={"X-Session-Id": session}, timeout=180,
                      json={"model": "ecgw/edge-only", "stream": stream, "max_tokens": 8,
                            "messages": [{"role": "user", "content": "Say hello."}]})


@pytest.mark.parametrize("stream", [False, True])
def test_a_real_llama_server_serves_beside_a_stub(start_gateway, replicas, stream):
    url = llama_url()
    stub = replicas["a"]
    real = {"name": "llama", "base_url": url, "model": "smollm2", "compat": LLAMA_COMPAT}
    gw = start_gateway(edge={"deployments": [real, deployment("stub", stub.url)], "read_timeout_s": 120},
                       privacy={"layers": {"ner": False}})
    members = [("llama", 1.0), ("stub", 1.0)]
    on_llama, on_stub = session_on("llama", members), session_on("stub", members)
    for session, name in ((on_llama, "llama"), (on_stub, "stub")):
        response = _chat(gw, session, stream=stream)
        assert response.status_code == 200, response.text
        assert response.headers["x-ecgw-edge-deployment"] == name
    # the stub fails before its first byte: the real server answers the stub's session instead
    stub.script(Reply(status=503, error_message="overloaded"))
    response = _chat(gw, on_stub, stream=stream)
    assert response.status_code == 200 and response.headers["x-ecgw-edge-deployment"] == "llama"
    calls = [(c.deployment, c.model, c.status) for c in gw.meter.calls]
    assert calls == [("llama", "smollm2", 200), ("stub", "edge-model", 200), ("stub", "edge-model", 502),
                     ("llama", "smollm2", 200)]
    ready = httpx.get(gw.url + "/readyz", timeout=30).json()["upstreams"]["edge"]["deployments"]
    assert ready["llama"]["ready"] and ready["stub"]["ready"]
