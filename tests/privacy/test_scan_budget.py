"""A request's detection has a budget (``privacy.scan_budget``: bytes of new text, CPU seconds): past it nothing
leaves, and the step fails as ``privacy.on_privacy_error`` says — a 413 ``privacy_scan_too_large`` in the surface's own
envelope naming the limit, or the edge answers (issue 37)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from privacy.detect import ScanMeter, ScanOverBudget
from privacy.errors import PrivacyFailedToEdge
from privacy.factory import build_egress_check
from privacy.settings import PrivacySettings
from privacy.vault import Vault
from tests.fakes.model_server import Reply
from tests.privacy.helpers import protector

LARGE = "客户：王建国 联系人 李娜 " * 200  # 2,800 characters, 7.2 KB of UTF-8
SMALL_BUDGET = {"layers": {"ner": False}, "scan_budget": {"max_bytes": 4096}}


def _body(path: str, stream: bool = False) -> dict[str, Any]:
    messages = [{"role": "user", "content": LARGE}]
    if path == "/v1/responses":
        return {"model": "ecgw/cloud-only", "input": LARGE, "stream": stream}
    if path == "/v1/messages":
        return {"model": "ecgw/cloud-only", "max_tokens": 16, "messages": messages, "stream": stream}
    return {"model": "ecgw/cloud-only", "messages": messages, "stream": stream}


@pytest.fixture(scope="module")
def small_budget(module_gateway):
    return module_gateway(privacy=SMALL_BUDGET)


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses", "/v1/messages"])
@pytest.mark.parametrize("stream", [False, True])
def test_past_the_bytes_budget_the_client_hears_413_in_its_surfaces_shape(small_budget, cloud, path, stream):
    gw = small_budget
    response = httpx.post(gw.url + path, json=_body(path, stream), timeout=30)
    assert response.status_code == 413, response.text
    assert response.headers["x-ecgw-request-id"]
    error = response.json()["error"]
    if path == "/v1/messages":
        assert response.json()["type"] == "error" and error["type"] == "request_too_large"
    else:
        assert error["code"] == "privacy_scan_too_large" and error["type"] == "privacy_scan_too_large"
    assert "privacy.scan_budget.max_bytes" in error["message"] and "nothing was sent" in error["message"]
    assert cloud.requests == []


def test_past_the_budget_with_on_privacy_error_edge_the_edge_answers(start_gateway, edge, cloud):
    gw = start_gateway(privacy={**SMALL_BUDGET, "on_privacy_error": "edge"})
    edge.script(Reply(content="edge answer"))
    response = httpx.post(gw.url + "/v1/chat/completions", json=_body("/v1/chat/completions"), timeout=30)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "edge answer"
    assert response.headers["x-ecgw-route"] == "edge"
    assert cloud.requests == []


def test_within_the_budget_the_same_request_leaves_protected(start_gateway, cloud):
    gw = start_gateway(privacy={"layers": {"ner": False}, "scan_budget": {"max_bytes": 8192}})
    cloud.script(Reply(content="ok"))
    response = httpx.post(gw.url + "/v1/chat/completions", json=_body("/v1/chat/completions"), timeout=30)
    assert response.status_code == 200, response.text
    assert "王建国" not in str(cloud.requests)


async def test_only_new_text_counts_towards_the_bytes_budget():
    """A session's history scanned at an earlier step costs nothing again: the next step is within its budget."""
    p = protector(layers={"ner": False}, scan_budget={"max_bytes": 4096})
    first = [{"role": "user", "content": LARGE[:1000]}]
    await p.protect({"messages": first}, session_id="s", request_id="r1")
    second = first + [{"role": "assistant", "content": "noted"}, {"role": "user", "content": LARGE[:1000] + "!"}]
    await p.protect({"messages": second}, session_id="s", request_id="r2")
    with pytest.raises(ScanOverBudget, match="max_bytes"):
        await p.protect({"messages": [{"role": "user", "content": LARGE}]}, session_id="t", request_id="r3")


async def test_past_the_cpu_budget_detection_stops():
    p = protector(layers={"ner": False}, scan_budget={"max_cpu_s": 0.01})
    body = {"messages": [{"role": "user", "content": LARGE[:2000] + str(i)} for i in range(40)]}
    with pytest.raises(ScanOverBudget, match="privacy.scan_budget.max_cpu_s"):
        await p.protect(body, session_id="s", request_id="r")
    edge = protector(layers={"ner": False}, scan_budget={"max_cpu_s": 0.01}, on_privacy_error="edge")
    with pytest.raises(PrivacyFailedToEdge, match="max_cpu_s"):
        await edge.protect(body, session_id="s", request_id="r")


def test_the_last_check_stops_past_the_cpu_budget():
    check = build_egress_check(PrivacySettings())
    meter = ScanMeter(0.001)
    body = {"messages": [{"role": "user", "content": f"card {i}"} for i in range(3)]}
    with meter.running(), pytest.raises(ScanOverBudget, match="max_cpu_s"):
        deadline = time.thread_time() + 0.005
        while time.thread_time() < deadline:  # the request's detection spent its budget before the last check
            pass
        check.read(body, None, Vault(), meter=meter)


async def test_while_the_protector_runs_detection_threads_hand_the_gil_back_within_a_millisecond():
    """A heavy scan on a worker thread must not hold the event loop's small requests for CPython's 5 ms a turn
    (``benchmarks.victim``); the process's interval comes back when the protector stops."""
    import sys

    before = sys.getswitchinterval()
    p = protector(database_url=None, layers={"ner": False}, warm_at_start=False)
    await p.start()
    try:
        assert sys.getswitchinterval() <= 0.001
    finally:
        await p.aclose()
    assert sys.getswitchinterval() == before
