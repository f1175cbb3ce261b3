"""``server.api_keys`` entries: ``{name, key | key_env, tenant}`` beside bare strings; a session belongs to the
tenant, so a tenant's keys share its history and a rotated key orphans nothing."""

from __future__ import annotations

import httpx
import pytest

from gateway.config.settings import ApiKey, ConfigError, load_settings
from gateway.state.tenancy import Tenancy, bare_owner, owner_moves
from tests.fakes.model_server import ModelServer, Reply

OWNER_KEY = b"o" * 32


def _tenancy(**server: object) -> Tenancy:
    settings = load_settings(None, server=server)
    return Tenancy(settings.server, settings.sessions, owner_key=OWNER_KEY, session_id_key=b"s" * 32)


def test_entries_parse_to_name_secret_and_tenant(monkeypatch):
    monkeypatch.setenv("CI_KEY", "sk-from-env")
    server = load_settings(None, server={"api_keys": [
        "sk-bare", {"name": "ci", "key_env": "CI_KEY", "tenant": "acme"}, {"name": "laptop", "key": "sk-l"}]}).server
    assert server.keys() == [ApiKey("sk-bare", "sk-bare", "sk-bare", named=False),
                             ApiKey("ci", "sk-from-env", "acme"), ApiKey("laptop", "sk-l", "laptop")]
    assert "sk-from-env" not in repr(server.keys())  # the secret stays out of logs and tracebacks


@pytest.mark.parametrize(("entry", "param", "says"), [
    ({"name": "ci"}, "server.api_keys.0", "exactly one of 'key'"),
    ({"name": "ci", "key": "a", "key_env": "PATH"}, "server.api_keys.0", "exactly one of 'key'"),
    ({"name": "ci", "key_env": "ECGW_TEST_UNSET_VARIABLE"}, "server.api_keys.0.key_env", "ECGW_TEST_UNSET_VARIABLE"),
    ({"name": "ci", "key": "sk-secret-value", "tennant": "acme"}, "server.api_keys.0.tennant", "unknown key"),
    ({"name": "has space", "key": "sk-secret-value"}, "server.api_keys.0.name", "pattern"),
    ({"name": "ci", "key": "sk-secret-value", "tenant": "a/b"}, "server.api_keys.0.tenant", "pattern"),
])
def test_a_bad_entry_names_its_key_and_never_echoes_the_secret(entry, param, says):
    with pytest.raises(ConfigError) as caught:
        load_settings(None, server={"api_keys": [entry]})
    assert caught.value.param == param
    assert says in str(caught.value) and "sk-secret-value" not in str(caught.value)


def test_duplicate_names_or_secrets_are_refused():
    with pytest.raises(ConfigError, match="named 'ci'"):
        load_settings(None, server={"api_keys": [{"name": "ci", "key": "a"}, {"name": "ci", "key": "b"}]})
    with pytest.raises(ConfigError, match="listed twice"):
        load_settings(None, server={"api_keys": ["same", {"name": "other", "key": "same"}]})


def test_the_owner_is_the_tenant_for_named_keys_and_a_hash_for_bare_ones():
    tenancy = _tenancy(api_keys=["sk-bare", {"name": "old", "key": "sk-old", "tenant": "acme"},
                                 {"name": "new", "key": "sk-new", "tenant": "acme"}],
                       admin_keys=[{"name": "root", "key": "sk-root"}])
    old, new = (tenancy.authenticate({"authorization": f"Bearer {k}"}) for k in ("sk-old", "sk-new"))
    assert old.owner == new.owner == "t.acme" and (old.name, new.name, old.tenant) == ("old", "new", "acme")
    bare = tenancy.authenticate({"x-api-key": "sk-bare"})
    assert bare.owner == bare_owner(OWNER_KEY, "sk-bare") and bare.label == bare.owner  # never the secret
    root = tenancy.authenticate({"authorization": "Bearer sk-root"})
    assert root.admin and root.owner == "t.root" and root.label == "root"


def test_owner_moves_map_each_named_keys_old_hash_to_its_tenant():
    settings = load_settings(None, server={"api_keys": ["sk-bare", {"name": "ci", "key": "sk-ci", "tenant": "acme"}]})
    assert owner_moves(settings.server, OWNER_KEY) == {bare_owner(OWNER_KEY, "sk-ci"): "t.acme"}


def test_two_keys_of_one_tenant_share_its_sessions_and_a_rotated_key_is_refused(start_gateway, cloud: ModelServer):
    gw = start_gateway(server={"api_keys": [{"name": "new", "key": "sk-new", "tenant": "acme"},
                                            {"name": "other", "key": "sk-other"}]})

    def chat(key: str, model: str | None = None) -> httpx.Response:
        body: dict[str, object] = {"messages": [{"role": "user", "content": "hi"}]}
        if model:
            body["model"] = model
        return httpx.post(gw.base_url + "/chat/completions", json=body, timeout=30,
                          headers={"Authorization": f"Bearer {key}", "X-Session-Id": "run-1"})

    cloud.script(Reply(content="ok"))
    assert chat("sk-new", "ecgw/cloud-only").status_code == 200  # run-1 sticks to cloud-only for tenant acme
    assert chat("sk-other").headers["x-ecgw-policy"] == "edge-only"  # another tenant's run-1 is its own
    rotated = load_settings(None, server={"api_keys": [{"name": "newer", "key": "sk-newer", "tenant": "acme"}]})
    tenancy = Tenancy(rotated.server, rotated.sessions, owner_key=b"x" * 32, session_id_key=b"y" * 32)
    assert tenancy.session(tenancy.authenticate({"x-api-key": "sk-newer"}), {"x-session-id": "run-1"}, {})[0] == (
        "t.acme/run-1")  # the same internal id the first key's steps were stored under
