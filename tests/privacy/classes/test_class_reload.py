"""The class policy is validated at start and at reload (an unknown class or tier: exit 2, or a 400 naming the key,
the running configuration kept) and a reload applies a new one to the next step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.config.settings import ConfigError, load_settings
from tests.fakes.model_server import ModelServer, Reply
from tests.gateway.test_reload import _config, _reload, _write, gateway  # noqa: F401 - the fixture

EMAIL_STEP = {"model": "ecgw/cloud-only", "messages": [{"role": "user", "content": "write to alice@example.com"}]}


def _ask(url: str) -> httpx.Response:
    response = httpx.post(url + "/v1/chat/completions", timeout=30, json=EMAIL_STEP,
                          headers={"Authorization": "Bearer sk-user", "X-Session-Id": "s"})
    assert response.status_code == 200, response.text
    return response


@pytest.mark.parametrize(("privacy", "param"), [
    ({"classes": {"specal": {"standard": "block"}}}, "privacy.classes.specal"),
    ({"tenants": {"acme": {"classes": {"special": {"public": "block"}}}}}, "privacy.tenants.acme.classes.special.public"),
    ({"keys": {"ci": {"profile": "paranoid"}}}, "privacy.keys.ci.profile"),
])
def test_a_bad_class_policy_is_refused_at_reload_naming_the_key(tmp_path: Path, edge: ModelServer,
                                                               cloud: ModelServer, gateway: Any,  # noqa: F811
                                                               privacy: dict[str, Any], param: str) -> None:
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    url = gateway(path)
    _write(path, {**config, "privacy": {**config["privacy"], **privacy}})
    answer = _reload(url)
    assert answer.status_code == 400 and answer.json()["error"]["param"].startswith(param), answer.text
    with pytest.raises(ConfigError, match=param.replace(".", r"\.")):
        load_settings(path)  # and at start


def test_a_reload_applies_a_new_class_policy(tmp_path: Path, edge: ModelServer, cloud: ModelServer,
                                             gateway: Any) -> None:  # noqa: F811
    config = _config(tmp_path, edge, cloud)
    path = _write(tmp_path / "config.yaml", config)
    url = gateway(path)
    cloud.script(Reply("cloud answer"))
    assert _ask(url).headers["x-ecgw-route"] == "cloud"
    _write(path, {**config, "privacy": {**config["privacy"], "classes": {"contact": {"standard": "block"}}}})
    assert _reload(url).status_code == 200
    edge.script(Reply("edge answer"))
    kept = _ask(url)
    assert kept.headers["x-ecgw-fallback"] == "data-class" and len(cloud.requests) == 1
