"""`ecgw serve --workers 2`: a virtual key works on every worker as soon as its create call returns, and stops
working on every worker as soon as its revoke call returns; a dashboard token signed out on one worker opens nothing
on either. Requests go over connections opened together before the key exists (kept alive: each stays with the
worker that accepted it, so both workers hold some) and over fresh ones."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from benchmarks.contenders import free_port
from tests.processes import serve, wait_healthy

ADMIN = "sk-admin-workers"
TRIES = 12
HELD = 8


def _chat(base: str, key: str, client: httpx.Client | None = None) -> int:
    if client is None:
        with httpx.Client(timeout=30) as fresh:  # a new connection: the workers share the socket
            return _chat(base, key, fresh)
    return client.post(base + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                       json={"messages": [{"role": "user", "content": "hi"}]}).status_code


def _everywhere(base: str, key: str, held: list[httpx.Client]) -> list[int]:
    return [_chat(base, key, client) for client in held] + [_chat(base, key) for _ in range(TRIES)]


def test_a_key_holds_on_every_worker_when_its_create_and_revoke_calls_return(tmp_path, edge, cloud):
    port = free_port()
    config = {"server": {"port": port, "workers": 2, "admin_keys": [{"name": "ops", "key": ADMIN}]},
              "edge": {"base_url": edge.url + "/v1", "model": "edge-model"},
              "cloud": {"model": "openai/gpt-test", "api_base": cloud.url + "/v1", "api_key_env": None},
              "sessions": {"store": "sqlite", "sqlite_path": str(tmp_path / "sessions.sqlite3")},
              "privacy": {"layers": {"ner": False}},
              "database_url": f"sqlite:///{tmp_path / 'm.sqlite3'}"}
    proc = serve(config, tmp_path / "c.yaml")
    admin = {"Authorization": f"Bearer {ADMIN}"}
    try:
        base = f"http://127.0.0.1:{port}"
        wait_healthy(base, proc, timeout_s=300)  # two workers starting on a busy machine
        held = [httpx.Client(timeout=30) for _ in range(HELD)]
        with ThreadPoolExecutor(HELD) as pool:  # opened at once, so both workers accept some
            list(pool.map(lambda client: client.get(base + "/healthz"), held))
        for _ in range(3):  # a few keys, each used at once
            made = httpx.post(base + "/admin/v1/keys", headers=admin, json={"tenant": "acme"}, timeout=30).json()
            assert _everywhere(base, made["key"], held) == [200] * (HELD + TRIES)
            revoked = httpx.delete(base + f"/admin/v1/keys/{made['id']}", headers=admin, timeout=30)
            assert revoked.json() == {"id": made["id"], "revoked": True}
            assert _everywhere(base, made["key"], held) == [401] * (HELD + TRIES)
        signed = httpx.post(base + "/ui/login", data={"key": ADMIN}, timeout=30)
        token = signed.cookies["ecgw_ui"]
        assert httpx.post(base + "/ui/logout", cookies={"ecgw_ui": token}, timeout=30).status_code == 303
        opened = [client.get(base + "/ui/api/overview", cookies={"ecgw_ui": token}).status_code for client in held]
        assert opened == [401] * HELD
        for client in held:
            client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
