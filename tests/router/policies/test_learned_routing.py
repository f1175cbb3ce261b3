"""The ``learned-routing`` policy through a real gateway: it escalates the steps its model scores above the
threshold, aims at a target cloud rate instead when told, picks up a changed model file without a restart, and a
missing or invalid file fails at start naming its path."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from benchmarks.learning import top_for_entropy
from gateway.config.settings import ConfigError
from gateway.live.policy_choice import build_router
from router.learning.model import RouterModel
from tests.conftest import RunningGateway, settings_for
from tests.fakes.model_server import ModelServer, Reply


def _model(path: Path, coefficient: float) -> Path:
    """P(disagree) = sigmoid(coefficient · (entropy_first − 1)): with a positive coefficient, high entropy escalates."""
    RouterModel(("entropy_first",), (1.0,), (1.0,), (coefficient,), 0.0, 0.0).write(path)
    return path


def _knobs(**knobs: object) -> dict[str, object]:
    return {"policy": {"default": "learned-routing", "knobs": {"learned-routing": knobs}}}


def _route(gw: RunningGateway, edge: ModelServer, entropy: float) -> str:
    edge.script(Reply(content="probe", first_token_top=top_for_entropy(entropy)), Reply(content="edge answer"))
    response = httpx.post(gw.base_url + "/chat/completions", timeout=30, headers={"X-Session-Id": "learned"},
                          json={"model": "ecgw", "messages": [{"role": "user", "content": "go"}]})
    assert response.status_code == 200, response.text
    edge.reset()
    return response.headers["x-ecgw-route"]


def test_threshold_and_a_hot_swapped_model(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                           tmp_path: Path) -> None:
    path = _model(tmp_path / "router.json", 4.0)
    gw = start_gateway(**_knobs(model=str(path), threshold=0.5))
    assert _route(gw, edge, 2.0) == "mixed"  # probed on the edge, answered by the cloud
    assert _route(gw, edge, 0.3) == "edge"
    _model(path, -4.0)  # the operator writes a new model: the next step reads it
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert _route(gw, edge, 2.0) == "edge"
    assert _route(gw, edge, 0.3) == "mixed"
    path.write_text("{not json")  # a broken file keeps the model that was serving
    assert _route(gw, edge, 0.3) == "mixed"
    step = gw.meter.steps[-1]
    assert step.reason == "learned" and step.signal["threshold"] == 0.5 and 0.5 < float(step.signal["p_disagree"]) < 1
    assert "entropy_first" in step.features and step.features["step_index"] == 1


def test_a_target_cloud_rate_sets_the_threshold(start_gateway: Callable[..., RunningGateway], edge: ModelServer,
                                                tmp_path: Path) -> None:
    gw = start_gateway(**_knobs(model=str(_model(tmp_path / "router.json", 2.0)), target_cloud_rate=0.25))
    routes = [_route(gw, edge, 0.2 + 0.1 * (i % 10)) for i in range(24)]
    assert routes[:20] == ["edge"] * 20  # warming up: nothing escalates until the tracker has seen 20 signals
    assert "mixed" in routes[20:]
    assert gw.meter.steps[-1].reason == "target" and gw.meter.steps[-1].signal["target_cloud_rate"] == 0.25


def test_a_missing_or_invalid_model_fails_at_start_naming_its_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "router.json"
    with pytest.raises(ConfigError) as caught:
        build_router(settings_for("http://127.0.0.1:9", "http://127.0.0.1:9", **_knobs(model=str(missing))))
    assert str(missing) in str(caught.value) and "policy.knobs.learned-routing.model" in str(caught.value)
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "ecgw-router/logistic-v1", "features": ["entropy_first"]}')
    with pytest.raises(ConfigError, match="bad.json: 'coefficients' must give one number per feature"):
        build_router(settings_for("http://127.0.0.1:9", "http://127.0.0.1:9", **_knobs(model=str(bad))))
    with pytest.raises(ConfigError, match="threshold and target_cloud_rate are both set"):
        build_router(settings_for("http://127.0.0.1:9", "http://127.0.0.1:9",
                                  **_knobs(model=str(bad), threshold=0.3, target_cloud_rate=0.2)))
