"""The dashboard's sign-in (issue 22 §2, issue 37 §4): the cookie holds a signed, expiring token — never the admin
key — that logout revokes (a copied token stops working too); it is Secure behind TLS; sign-in bodies are capped
before they are read, every attempt counts before its body is parsed, failures are throttled per client, and
X-Forwarded-For is believed only from server.forwarded_allow_ips; every /ui answer forbids framing and other
origins' code."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from gateway.dashboard.access import COOKIE, LOGIN_MAX_BYTES, UiSessions
from gateway.state.sessions import MemorySessionStore
from privacy.session_store import SessionStoreUnavailable
from tests.fakes.model_server import ModelServer
from tests.observability.gateways import running_gateway

KEYS = {"api_keys": ["sk-tenant"], "admin_keys": ["sk-admin"]}


def _cookie(response: httpx.Response) -> str:
    header = response.headers["set-cookie"]
    assert header.startswith(COOKIE + "=")
    return header


def test_the_cookie_is_a_signed_token_that_logout_ends(tmp_path: Any, edge: ModelServer, cloud: ModelServer) -> None:
    with running_gateway(edge, cloud, server=KEYS, database_url=f"sqlite:///{tmp_path / 'gw.db'}") as (url, _):
        with httpx.Client(base_url=url, timeout=30) as client:
            signed = client.post("/ui/login", data={"key": "sk-admin"})
            header = _cookie(signed)
            assert signed.status_code == 303 and "sk-admin" not in header
            assert "HttpOnly" in header and "SameSite=strict" in header and "Secure" not in header  # plain HTTP
            token = client.cookies[COOKIE]
            assert client.get("/ui/api/overview").status_code == 200
            # a token edited by hand (a later expiry, another key's id) is refused; so is the key as a cookie
            expires, key_id, nonce, mac = token.split(".")
            for forged in (f"{int(expires) + 86400}.{key_id}.{nonce}.{mac}",
                           f"{expires}.{'0' * len(key_id)}.{nonce}.{mac}", "sk-admin"):
                r = httpx.get(url + "/ui/api/overview", cookies={COOKIE: forged})
                assert r.status_code == 401, forged
            other = httpx.post(url + "/ui/login", data={"key": "sk-admin"}).cookies[COOKIE]  # a second sign-in
            out = client.post("/ui/logout")
            assert out.status_code == 303 and COOKIE not in client.cookies
            assert client.get("/ui/api/overview").status_code == 401
            # the token is revoked, not only deleted from this browser: a copy of it opens nothing any more
            assert httpx.get(url + "/ui/api/overview", cookies={COOKIE: token}).status_code == 401
            assert httpx.get(url + "/ui/api/overview", cookies={COOKIE: other}).status_code == 200


def test_sign_ins_are_throttled_and_the_cookie_is_secure_behind_tls(tmp_path: Any, edge: ModelServer,
                                                                    cloud: ModelServer) -> None:
    with running_gateway(edge, cloud, server={**KEYS, "behind_tls_proxy": True},
                         database_url=f"sqlite:///{tmp_path / 'gw.db'}") as (url, _):
        with httpx.Client(base_url=url, timeout=30) as client:
            assert "Secure" in _cookie(client.post("/ui/login", data={"key": "sk-admin"}))
            for _ in range(5):
                assert client.post("/ui/login", data={"key": "sk-guess"}).status_code == 401
            blocked = client.post("/ui/login", data={"key": "sk-admin"})  # even the right key, for a while
            assert blocked.status_code == 429 and int(blocked.headers["retry-after"]) > 0
            assert "set-cookie" not in blocked.headers


def test_a_token_expires_and_names_a_configured_key() -> None:
    now = [1000.0]
    store = MemorySessionStore()
    sessions = UiSessions(b"k" * 32, store, ttl_s=60, clock=lambda: now[0])
    token = sessions.issue("sk-admin")
    assert sessions.valid(token, ["sk-admin"]) and not sessions.valid(token, ["sk-other-admin"])
    assert not UiSessions(b"j" * 32, store, clock=lambda: now[0]).valid(token, ["sk-admin"])  # another secrets key
    now[0] += 61
    assert not sessions.valid(token, ["sk-admin"])


def _post(url: str, content: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(url + "/ui/login", content=content, timeout=30,
                      headers={"content-type": "application/x-www-form-urlencoded", **(headers or {})})


def test_sign_in_bodies_are_capped_and_counted_before_they_are_read(tmp_path: Any, edge: ModelServer,
                                                                    cloud: ModelServer) -> None:
    with running_gateway(edge, cloud, server=KEYS, database_url=f"sqlite:///{tmp_path / 'gw.db'}") as (url, _):
        huge = b"key=" + b"a" * (8 * 1024 * 1024)
        said = _post(url, huge)  # a Content-Length past the cap: refused without reading it
        assert said.status_code == 413 and str(LOGIN_MAX_BYTES) in said.text

        def chunks() -> Any:  # no Content-Length: reading stops at the cap
            yield b"key="
            for _ in range(64):
                yield b"a" * 65536

        assert _post(url, chunks()).status_code == 413
        assert _post(url, b"key=%ZZ\xff").status_code == 401  # an unparsable guess: a failure like any other
        for _ in range(2):
            assert _post(url, b"key=sk-guess").status_code == 401
        # five attempts counted, not one of them a sign-in: the right key waits too
        blocked = _post(url, b"key=sk-admin")
        assert blocked.status_code == 429 and "set-cookie" not in blocked.headers


@pytest.mark.parametrize("trusted", [False, True])
def test_forwarded_addresses_count_only_from_a_named_proxy(tmp_path: Any, edge: ModelServer, cloud: ModelServer,
                                                           trusted: bool) -> None:
    server = {**KEYS, "forwarded_allow_ips": ["127.0.0.0/8"] if trusted else []}
    with running_gateway(edge, cloud, server=server, database_url=f"sqlite:///{tmp_path / 'gw.db'}") as (url, _):
        for i in range(5):  # a new X-Forwarded-For on every guess, from loopback
            assert _post(url, b"key=sk-guess", {"x-forwarded-for": f"203.0.113.{i}"}).status_code == 401
        right = _post(url, b"key=sk-admin", {"x-forwarded-for": "203.0.113.99"})
        # believed only from a named proxy: each guess was another client; otherwise all five were this peer's
        assert right.status_code == (303 if trusted else 429), right.text


def test_every_ui_answer_forbids_framing_and_other_origins(tmp_path: Any, edge: ModelServer,
                                                           cloud: ModelServer) -> None:
    with running_gateway(edge, cloud, server=KEYS, database_url=f"sqlite:///{tmp_path / 'gw.db'}") as (url, _):
        admin = {"authorization": "Bearer sk-admin"}
        for answer in (httpx.get(url + "/ui"), httpx.get(url + "/ui", headers=admin),
                       httpx.get(url + "/ui/static/app.js", headers=admin),
                       httpx.get(url + "/ui/api/overview", headers=admin), _post(url, b"key=nope"),
                       httpx.post(url + "/ui/logout")):
            assert answer.headers["x-frame-options"] == "DENY", answer.request.url
            policy = answer.headers["content-security-policy"]
            assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
            assert "unsafe-inline" not in policy and "script-src" not in policy.replace("default-src", "")


def test_a_signed_out_token_is_refused_and_a_store_that_cannot_say_lets_nobody_in() -> None:
    class Down(MemorySessionStore):
        async def get(self, session_id: str, key: str) -> Any:
            raise SessionStoreUnavailable("test", "down")

    async def run() -> None:
        sessions = UiSessions(b"k" * 32, MemorySessionStore())
        token = sessions.issue("sk-admin")
        assert await sessions.signed_in(token, ["sk-admin"])
        await sessions.sign_out(token, ["sk-admin"])
        assert not await sessions.signed_in(token, ["sk-admin"]) and sessions.valid(token, ["sk-admin"])
        down = UiSessions(b"k" * 32, Down())
        assert not await down.signed_in(down.issue("sk-admin"), ["sk-admin"])

    asyncio.run(run())
