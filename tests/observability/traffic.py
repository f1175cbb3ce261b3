"""A small, known mix of traffic for the dashboard tests: an experiment (cloud-only vs step-routing arms), sessions
under edge-only and advisor, and a privacy session whose second step is kept on the edge by a block."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.model_server import ModelServer, Reply, ToolCall

UNSURE = {f"t{i}": 1.0 for i in range(20)}  # H = ln 20 ≈ 3.0 nats: escalates at τ 1.5
CONFIDENT = {"Sure": 0.97, "Yes": 0.02, "OK": 0.01}  # H ≈ 0.15 nats: stays on the edge
NAME, PHONE = "Marisol Etxeberria", "+1 415 555 0142"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
EXPERIMENT = "router-ab"
ARM_SESSIONS = {"cloud": ["ab-cloud-1", "ab-cloud-2", "ab-cloud-3"], "step": ["ab-step-1", "ab-step-2", "ab-step-3"]}
GRADES = {"ab-cloud-1": 1.0, "ab-cloud-2": 1.0, "ab-cloud-3": 0.0, "ab-step-1": 1.0, "ab-step-2": 0.0,
          "ab-step-3": 0.0}
PRIVATE_SESSION = "privacy-1"
SYSTEM = ("You are a careful operations agent. Read the on-call log, summarise incidents in plain words, name the "
          "services involved, list follow-up actions with owners, and never invent facts that are not in the log. "
          "Answer in short paragraphs; use bullet points for actions; keep every answer under two hundred words. "
          "When unsure, say so and ask for the missing detail instead of guessing.")


def settings(tmp: Path) -> dict[str, Any]:
    return {
        "database_url": f"sqlite:///{tmp / 'ecgw.sqlite3'}",
        "accounting": {"prices": {"gpt-test": {"input": 2.5, "cache_read": 0.25, "output": 10.0}},
                       "edge_models": {"edge-model": {"params": 9e9}}},
        "policy": {"default": "edge-only", "knobs": {"step-routing": {"mode": "probe", "tau": 1.5}}},
        "privacy": {"actions": {"AWS_ACCESS_KEY": "block"}},
        "experiments": {"active": EXPERIMENT, "definitions": {EXPERIMENT: {"arms": {
            "cloud": {"policy": "cloud-only"}, "step": {"policy": "step-routing"}}}}},
    }


@dataclass
class Traffic:
    """What the driver saw in the responses: the route header of every step, per policy and per session."""

    routes: dict[str, Counter[str]] = field(default_factory=dict)
    session_routes: dict[str, list[str]] = field(default_factory=dict)
    fallbacks: dict[str, list[str | None]] = field(default_factory=dict)

    def saw(self, response: httpx.Response, session: str) -> None:
        assert response.status_code == 200, response.text
        policy, route = response.headers["x-ecgw-policy"], response.headers["x-ecgw-route"]
        self.routes.setdefault(policy, Counter())[route] += 1
        self.session_routes.setdefault(session, []).append(route)
        self.fallbacks.setdefault(session, []).append(response.headers.get("x-ecgw-fallback"))


def _step(client: httpx.Client, traffic: Traffic, session: str, messages: list[dict[str, Any]],
          **headers: str) -> str:
    response = client.post("/v1/chat/completions", headers={"X-Session-Id": session, **headers},
                           json={"model": "agent", "messages": messages})
    traffic.saw(response, session)
    return str(response.json()["choices"][0]["message"]["content"])


def drive(url: str, edge: ModelServer, cloud: ModelServer, *, key: str | None = None) -> Traffic:
    traffic = Traffic()
    auth = {"Authorization": f"Bearer {key}"} if key else {}
    with httpx.Client(base_url=url, timeout=60, headers=auth) as client:
        for arm, sessions in ARM_SESSIONS.items():
            for n, session in enumerate(sessions):
                history = [{"role": "system", "content": SYSTEM},
                           {"role": "user", "content": f"Summarise incident {n} from the on-call log."}]
                for first_top in (UNSURE, CONFIDENT):
                    if arm == "step":
                        edge.script(Reply("t0", first_token_top=first_top))
                    answer = _step(client, traffic, session, history, **{"X-ECGW-Arm": arm})
                    history += [{"role": "assistant", "content": answer},
                                {"role": "user", "content": "Now list the follow-up actions."}]
        for session in ("edge-1", "edge-2"):
            _step(client, traffic, session, [{"role": "user", "content": "Rename the log files."}],
                  **{"X-ECGW-Policy": "edge-only"})
        edge.script(Reply(content=None, tool_calls=[ToolCall("ask_cloud_advisor", '{"question": "which order?"}')]),
                    Reply(content="Rotate first, then compress."))
        cloud.script(Reply("Rotate, then compress."))
        _step(client, traffic, "advisor-1", [{"role": "user", "content": "Plan the log rotation."}],
              **{"X-ECGW-Policy": "advisor"})
        units = {"items": [{"entity_id": "c1", "name": NAME, "sensitive_fields": [
            {"field": "name", "value": NAME, "dimension": "identity", "weight": 2.0},
            {"field": "phone", "value": PHONE, "dimension": "contact", "weight": 1.0}]}]}
        assert client.put(f"/v1/sessions/{PRIVATE_SESSION}/units", json=units).status_code == 200
        private = [{"role": "user", "content": f"Draft a reminder to {NAME} ({PHONE}) about invoice 1042."}]
        answer = _step(client, traffic, PRIVATE_SESSION, private, **{"X-ECGW-Policy": "cloud-only"})
        private += [{"role": "assistant", "content": answer},
                    {"role": "user", "content": f"Deploy it with key {AWS_KEY}."}]
        _step(client, traffic, PRIVATE_SESSION, private, **{"X-ECGW-Policy": "cloud-only"})
        for session, score in GRADES.items():
            graded = client.put(f"/v1/sessions/{session}/grade", json={"score": score, "source": "test"})
            assert graded.status_code == 200, graded.text
    return traffic
