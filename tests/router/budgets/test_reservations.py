"""A reservation counts what the door sends: one output cap (the smaller of ``max_tokens`` and
``max_completion_tokens``, or ``limits.default_max_tokens`` when the request names none), whole numbers only, ``n``
counted; what cannot be reserved honestly (``100000.0``, ``n: 5.0``) is refused with a 400 in each surface's
envelope. With a $1 budget, eight concurrent requests against a slow, long-winded cloud spend at most $1."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tests.fakes.model_server import Reply
from tests.router.budgets.test_budgets import KEY, budget_of, chat, limited, start_gateway

__all__ = ["start_gateway"]  # the fixture, used by name

LONG = " ".join(f"w{i}" for i in range(1000))  # 1,000 output tokens: $2 at the test's output price
BUDGET = {"keys": {"k1": {"cloud_usd": {"amount": 1.0, "window": "1d"}}}, "default_max_tokens": 16}
CAPS = ("max_tokens", "max_completion_tokens")


def test_eight_concurrent_requests_spend_no_more_than_the_budget(start_gateway, cloud):
    gw = start_gateway(**limited(**BUDGET))
    cloud.script(*[Reply(content=LONG, delay_s=0.5)] * 8)  # slow: all eight reserve before any settles
    tricks: list[dict[str, Any]] = [{}, {}, {}, {}, {"max_tokens": 1000.0}, {"max_completion_tokens": 1000.0},
                                    {"n": 5.0}, {"max_tokens": 1000, "n": 1.5}]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda extra: chat(gw, "write at length", model="ecgw/cloud-only", **extra), tricks))
    assert [a.status_code for a in answers] == [200] * 4 + [400] * 4, [a.text for a in answers]
    for answer, param in zip(answers[4:], ("max_tokens", "max_completion_tokens", "n", "n"), strict=True):
        error = answer.json()["error"]
        assert error["param"] == param and error["code"] == "invalid_value" and "whole number" in error["message"]
        assert answer.headers["x-ecgw-request-id"].startswith("req-")
    # what left carried the cap its reservation counted, and the spend stayed inside the budget
    assert [{k: r.get(k) for k in CAPS} for r in cloud.requests] == [{"max_tokens": None,
                                                                      "max_completion_tokens": 16}] * 4
    [row] = budget_of(gw)
    assert 0 < row["spent"] <= 1.0, row


def test_the_door_sends_one_cap_the_smaller_and_reserves_it_times_n(start_gateway, cloud):
    gw = start_gateway(**limited(**BUDGET))
    cloud.script(Reply(content=LONG), Reply(content=LONG))
    both = chat(gw, "hi", model="ecgw/cloud-only", max_completion_tokens=1000, max_tokens=3)
    assert both.status_code == 200 and both.headers["x-ecgw-route"] == "cloud"
    assert {k: cloud.requests[-1].get(k) for k in CAPS} == {"max_tokens": None, "max_completion_tokens": 3}
    # n multiplies the reservation: 450 output tokens × 2 = $1.80 cannot be reserved from $1, so the edge answers
    many = chat(gw, "hi", model="ecgw/cloud-only", max_tokens=450, n=2)
    assert many.status_code == 200 and many.headers.get("x-ecgw-fallback") == "budget"
    one = chat(gw, "hi", model="ecgw/cloud-only", max_tokens=450)
    assert one.headers["x-ecgw-route"] == "cloud" and cloud.requests[-1]["max_tokens"] == 450


def test_a_fractional_cap_is_refused_in_the_surfaces_envelope(start_gateway, cloud):
    gw = start_gateway(**limited(**BUDGET))
    answer = httpx.post(gw.base_url + "/responses", headers=KEY, timeout=30,
                        json={"model": "ecgw/cloud-only", "input": "hi", "max_output_tokens": 100000.0})
    assert answer.status_code == 400 and answer.json()["error"]["param"] == "max_output_tokens", answer.text
    assert answer.headers["x-ecgw-request-id"].startswith("req-")
    answer = httpx.post(gw.base_url + "/messages", headers={"x-api-key": "k1"}, timeout=30,
                        json={"model": "ecgw/cloud-only", "max_tokens": 100000.0,
                              "messages": [{"role": "user", "content": "hi"}]})  # Anthropic's envelope (held)
    assert answer.status_code == 400 and answer.json()["type"] == "error", answer.text
    assert "max_tokens" in answer.json()["error"]["message"] and not cloud.requests
