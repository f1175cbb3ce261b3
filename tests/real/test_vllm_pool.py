"""A real vLLM as one member of the edge pool beside a stub, and vLLM's ``cache_salt`` doing what the pool sends
it for: two tenants' identical prompts share no cached prefix, one tenant's repeat hits."""

from __future__ import annotations

import httpx
import pytest

from gateway.egress.pools.rendezvous import rank
from tests.fleet.conftest import deployment
from tests.real.helpers import VLLM_MODEL, vllm_url
from tests.real.test_vllm import LONG_SYSTEM

pytestmark = pytest.mark.real_vllm


def _chat(gw, session: str, key: str) -> httpx.Response:
    return httpx.post(gw.base_url + "/chat/completions", timeout=300,
                      headers={"X-Session-Id": session, "authorization": f"Bearer {key}"},
                      json={"model": "ecgw/edge-only", "max_tokens": 4, "temperature": 0,
                            "messages": [{"role": "system", "content": LONG_SYSTEM},
                                         {"role": "user", "content": "Which district has most parks?"}]})


def test_vllm_in_a_pool_keeps_each_tenants_prefix_cache_to_itself(start_gateway, edge):
    stub = edge  # the suite's stub edge, beside the real one
    real = {"name": "vllm", "base_url": vllm_url(), "model": VLLM_MODEL}
    gw = start_gateway(edge={"deployments": [real, deployment("stub", stub.url)], "read_timeout_s": 300},
                       server={"api_keys": ["tenant-one", "tenant-two"]}, privacy={"layers": {"ner": False}})
    cached = []
    for key in ("tenant-one", "tenant-two", "tenant-one"):
        # affinity hashes the owner-namespaced id: find a session of this tenant's that vLLM serves
        owner = gw.services.tenancy.authenticate({"authorization": f"Bearer {key}"}).prefix
        session = next(f"run-{n}" for n in range(10_000) if _on_vllm(owner + f"run-{n}"))
        response = _chat(gw, session, key)
        assert response.status_code == 200, response.text
        assert response.headers["x-ecgw-edge-deployment"] == "vllm"
        details = response.json()["usage"].get("prompt_tokens_details") or {}
        cached.append(int(details.get("cached_tokens") or 0))
    assert cached[1] == 0, cached  # tenant two's identical prompt: nothing of tenant one's prefix
    assert cached[2] > 0, cached  # tenant one again: its own prefix hits


def _on_vllm(internal: str) -> bool:
    members = [("vllm", 1.0), ("stub", 1.0)]
    return members[rank(internal, members)[0]][0] == "vllm"
