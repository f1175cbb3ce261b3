"""The incremental step (issue 41): an agent's step N+1 re-sends steps 1..N, and only what is new is scrubbed —
while the cloud gets the bytes a scrub of the whole body gives, and the way back restores what this call gave."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gateway.state.sessions import MemorySessionStore
from privacy.factory import build_privacy_protector
from privacy.protector import PrivacyProtector
from privacy.settings import PrivacySettings
from tests.conftest import RunningGateway, launch_gateway
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.threaded import ThreadedServer
from tests.privacy.helpers import protector

SYSTEM = ("You are an office agent. The user is Maria Gonzalez (maria.gonzalez@acme-corp.example, +1 650-555-0142), "
          "account manager at Acme Corp. CRM key: sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c.")
NAMES = ["Alice Martin", "Bob Okafor", "Chen Zhang", "Dana Kowalski", "Elif Yilmaz", "Farid Haddad", "Grace Lee",
         "Hiro Tanaka", "Ines Garcia", "Jonas Berg"]
_EMAIL_PLACEHOLDER = re.compile(r"\[EMAIL[A-Z_]*_\d{3}\]")


def _record(step: int, email: str | None = None) -> str:
    return json.dumps({"id": f"CUST-{1000 + step}", "name": NAMES[step % len(NAMES)],
                       "email": email or f"client{step}@example.org", "phone": f"+1 415-555-{2000 + step}"})


def _user(step: int, email: str | None = None) -> dict[str, Any]:
    return {"role": "user", "content": f"Step {step}. The next CRM record: {_record(step, email)}"}


def _says(body: dict[str, Any]) -> Reply:
    """The cloud double's answer: the placeholder of the e-mail in the last message, as the model would quote it."""
    found = _EMAIL_PLACEHOLDER.findall(json.dumps(body["messages"][-1], ensure_ascii=False))
    return Reply(content=f"Noted {found[-1]}." if found else "Noted.")


@pytest.fixture(scope="module")
def quoting_cloud() -> Iterator[tuple[ModelServer, ThreadedServer]]:
    fake = ModelServer("cloud", model="gpt-test", responder=_says)
    with ThreadedServer(fake.app) as server:
        yield fake, server


@pytest.fixture()
def gateway(quoting_cloud: tuple[ModelServer, ThreadedServer], edge: ModelServer) -> Iterator[RunningGateway]:
    fake, server = quoting_cloud
    fake.requests.clear()
    gw, running = launch_gateway(edge.url, server.url)  # type: ignore[attr-defined]
    # The models now, not at the first step that needs NER (seconds under load): the cloud double closes a
    # connection idle for 5 s, and the gateway's next call on it would fail.
    gw.services.protector.load_models()
    yield gw
    running.stop()


def _step(gw: RunningGateway, session: str, messages: list[dict[str, Any]]) -> str:
    response = httpx.post(f"{gw.base_url}/chat/completions", headers={"X-Session-Id": session},
                          json={"model": "ecgw/cloud-only", "messages": messages}, timeout=30)
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


def _work(gw: RunningGateway) -> dict[str, float]:
    """The protector's work counters (``ecgw_privacy_scrub_parts``, ``ecgw_privacy_scrub_slots``) from /metrics."""
    text = httpx.get(f"{gw.url}/metrics").text
    found = re.findall(r'^ecgw_privacy_scrub_(parts|slots)_total\{\w+="(\w+)"\} (\S+)$', text, re.MULTILINE)
    return {f"{kind}.{label}": float(value) for kind, label, value in found}


def _delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {key: value - before.get(key, 0.0) for key, value in after.items()}


def _dumps(message: Any) -> str:
    return json.dumps(message, ensure_ascii=False)


def test_a_twenty_step_trajectory_scrubs_only_its_new_messages_and_sends_what_a_whole_scrub_sends(
        gateway: RunningGateway, quoting_cloud: tuple[ModelServer, ThreadedServer]) -> None:
    cloud, _ = quoting_cloud
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, _user(0)]
    sent: list[dict[str, Any]] = []
    for step in range(20):
        before = _work(gateway)
        answer = _step(gateway, "traj", history)
        work = _delta(_work(gateway), before)
        body = cloud.requests[-1]
        assert answer == f"Noted client{step}@example.org."  # the way back: this step's placeholder, restored
        for raw in ("Maria Gonzalez", "maria.gonzalez@acme-corp.example", f"client{step}@example.org",
                    NAMES[step % len(NAMES)]):
            assert raw not in _dumps(body)
        if sent:
            previous = sent[-1]["messages"]
            # what was scrubbed at an earlier step leaves byte for byte as it did then
            assert [_dumps(m) for m in body["messages"][:len(previous)]] == [_dumps(m) for m in previous]
            # and only the two new messages (the answer re-sent, the next record) were walked and applied
            assert work["parts.scrubbed"] == 2 and work["slots.applied"] == 2, work
            assert work["parts.reused"] >= len(previous), work
        sent.append(body)
        history += [{"role": "assistant", "content": answer}, _user(step + 1)]
    # The same placeholder for the same value at every step: Maria's e-mail as at the first step.
    first = _EMAIL_PLACEHOLDER.findall(_dumps(sent[0]["messages"][0]))
    assert first and all(first[0] in _dumps(body["messages"][0]) for body in sent)
    # An independent scrub of the last body as a whole (a fresh session, one call) sends the same bytes.
    _step(gateway, "traj-whole", history[:-2])
    assert _dumps(cloud.requests[-1]) == _dumps(sent[-1])


def test_a_message_edited_in_place_is_scrubbed_again_and_a_compacted_history_reuses_the_rest(
        gateway: RunningGateway, quoting_cloud: tuple[ModelServer, ThreadedServer]) -> None:
    cloud, _ = quoting_cloud
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, _user(0)]
    for step in range(4):
        answer = _step(gateway, "edit", history)
        history += [{"role": "assistant", "content": answer}, _user(step + 1)]
    _step(gateway, "edit", history)
    kept = cloud.requests[-1]["messages"]
    # The agent rewrites record 1 in its history (a compaction that edits a tool result in place).
    edited = copy.deepcopy(history)
    edited[3] = _user(1, email="changed1@example.org")
    before = _work(gateway)
    _step(gateway, "edit", edited)
    work = _delta(_work(gateway), before)
    body = cloud.requests[-1]["messages"]
    assert "changed1@example.org" not in _dumps(body) and "client1@example.org" not in _dumps(body)
    old, new = (_EMAIL_PLACEHOLDER.findall(_dumps(m[3])) for m in (kept, body))
    assert old != new and new[0] not in _dumps(kept)  # a new value's placeholder, not the stale message
    assert _dumps(body[3]) == _dumps(kept[3]).replace(old[0], new[0])
    assert [_dumps(m) for i, m in enumerate(body) if i != 3] == [_dumps(m) for i, m in enumerate(kept) if i != 3]
    assert work["parts.scrubbed"] == 1, work
    # A history cut short (the first rounds dropped): every message left moves, none is scrubbed again.
    compacted = [edited[0], *edited[5:]]
    before = _work(gateway)
    _step(gateway, "edit", compacted)
    work = _delta(_work(gateway), before)
    assert [_dumps(m) for m in cloud.requests[-1]["messages"]] == [_dumps(m) for m in [body[0], *body[5:]]]
    assert work["parts.scrubbed"] == 0 and work["slots.applied"] == 0, work


async def test_reused_parts_report_their_findings_where_they_stand_now() -> None:
    """The audit's findings (``ScrubbedRequest.by_slot``) of a body whose messages were scrubbed at earlier steps,
    some now at other places, are those of a scrub of the same body in a session that never saw it: the same
    locations, types, layers, actions and values in the same order, and the same data classes."""
    p: PrivacyProtector = protector()
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, _user(0)]
    for step in range(5):
        await p.scrub({"model": "m", "messages": history, "user": "Maria Gonzalez"}, session_id="inc")
        history += [{"role": "assistant", "content": f"Noted client{step}@example.org."}, _user(step + 1)]
    body = {"model": "m", "user": "Maria Gonzalez", "messages": [history[0], *history[5:]]}
    again = await p.scrub(body, session_id="inc")
    whole = await p.scrub(body, session_id="fresh")
    assert again.work.parts_reused == len(body["messages"]) - 2 + 2  # all but the last two messages; model, user
    assert whole.work.parts_reused == 0

    def described(scrubbed: Any) -> list[tuple[str, str, str, str, str]]:
        return [(a.finding.location, a.finding.type, a.finding.layer, a.action, a.finding.value)
                for a in scrubbed.applied]

    assert described(again) == described(whole) and described(again)
    assert again.held.claims() == whole.held.claims()
    assert again.verdict == whole.verdict


async def test_a_vault_another_worker_erased_and_began_again_is_not_served_from_memory() -> None:
    """Two workers share the session store: one erases the session and gives a new value the new vault's first
    placeholder; the other, at the session's next step, must not reuse what it remembers of the old vault (its
    placeholders would now restore another value): it scrubs the step again against the vault's new life."""
    store = MemorySessionStore()
    one, two = (build_privacy_protector(PrivacySettings(), database_url="sqlite://", sessions=store)
                for _ in range(2))
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, _user(0)]
    first = await one.scrub({"model": "m", "messages": history}, session_id="w")
    assert await one.scrub({"model": "m", "messages": history}, session_id="w") is not None
    await two.erase_session("w")
    await two.scrub({"model": "m", "messages": [_user(7)]}, session_id="w")  # client7's e-mail: the new life's 001
    history += [{"role": "assistant", "content": "Noted."}, _user(1)]
    again = await one.scrub({"model": "m", "messages": history}, session_id="w")
    assert again.work.parts_reused == 0
    maria = "maria.gonzalez@acme-corp.example"
    old, new = (_EMAIL_PLACEHOLDER.findall(_dumps(s.body["messages"][0])) for s in (first, again))
    assert first.values[old[0]] == maria and again.values[new[0]] == maria and new != old
