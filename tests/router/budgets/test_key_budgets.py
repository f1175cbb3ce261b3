"""A key's budget counts that key's calls alone: a new virtual key of a tenant that has already spent starts with
its whole budget, and so does a second configured key of the same tenant (the counters are seeded from the metering
database, whose rows name the key they were made for)."""

from __future__ import annotations

import httpx

from tests.fakes.model_server import Reply
from tests.gateway import test_reload
from tests.gateway.admin.test_virtual_keys import _admin
from tests.gateway.test_reload import _chat, _config, _write

gateway = test_reload.gateway  # a gateway read from a config file, with a SQLite metering database

CI, LAPTOP = "sk-ci", "sk-laptop"
CALLS = {"cloud_calls": {"amount": 2, "window": "1d"}}


def test_a_keys_budget_starts_from_its_own_spend_not_its_tenants(tmp_path, edge, cloud, gateway):
    config = _config(tmp_path, edge, cloud, limits={"keys": {"laptop": CALLS}})
    config["server"]["api_keys"] = [{"name": "ci", "key": CI, "tenant": "acme"},
                                    {"name": "laptop", "key": LAPTOP, "tenant": "acme"}]
    url = gateway(_write(tmp_path / "config.yaml", config))
    cloud.script(*[Reply(content="ok")] * 8)
    for i in range(3):  # the tenant's CI key spends three cloud calls
        assert _chat(url, CI, session=f"ci-{i}", model="ecgw/cloud-only").headers["x-ecgw-route"] == "cloud"
    usage = httpx.get(url + "/v1/usage?by=policy", headers={"Authorization": f"Bearer {CI}"}, timeout=30)
    assert sum(row["cloud_calls"] for row in usage.json()["data"]) == 3  # in the metering database now

    fresh = _admin("POST", url, "/admin/v1/keys", json={"tenant": "acme", "limits": CALLS}).json()["key"]
    for key in (fresh, LAPTOP):  # each starts with its two calls, and the third stays on the edge
        answers = [_chat(url, key, session=f"{key}-{i}", model="ecgw/cloud-only") for i in range(3)]
        assert [a.headers.get("x-ecgw-fallback") for a in answers] == [None, None, "budget"], key
        budget = httpx.get(url + "/v1/budget", headers={"Authorization": f"Bearer {key}"}, timeout=30).json()
        assert [(r["kind"], r["spent"]) for r in budget["limits"]] == [("cloud_calls", 2)], key
