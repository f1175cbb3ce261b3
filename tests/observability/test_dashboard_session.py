"""The dashboard's sign-in (issue 22 §2): the cookie holds a signed, expiring token — never the admin key — that
logout ends; it is Secure behind TLS; failed sign-ins are throttled."""

from __future__ import annotations

from typing import Any

import httpx

from gateway.dashboard.access import COOKIE, UiSessions
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
            expires, key_id, mac = token.split(".")
            for forged in (f"{int(expires) + 86400}.{key_id}.{mac}", f"{expires}.{'0' * len(key_id)}.{mac}",
                           "sk-admin"):
                r = httpx.get(url + "/ui/api/overview", cookies={COOKIE: forged})
                assert r.status_code == 401, forged
            out = client.post("/ui/logout")
            assert out.status_code == 303 and COOKIE not in client.cookies
            assert client.get("/ui/api/overview").status_code == 401


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
    sessions = UiSessions(b"k" * 32, ttl_s=60, clock=lambda: now[0])
    token = sessions.issue("sk-admin")
    assert sessions.valid(token, ["sk-admin"]) and not sessions.valid(token, ["sk-other-admin"])
    assert not UiSessions(b"j" * 32, clock=lambda: now[0]).valid(token, ["sk-admin"])  # another secrets key
    now[0] += 61
    assert not sessions.valid(token, ["sk-admin"])
