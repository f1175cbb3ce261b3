"""Configuration: the file, the environment over it, and clear errors for bad values."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config.settings import ConfigError, load_settings

ROOT = Path(__file__).resolve().parents[2]


def test_shipped_config_loads_with_documented_defaults():
    settings = load_settings(ROOT / "config.yaml")
    assert settings.server.port == 4000 and settings.server.host == "127.0.0.1"
    assert settings.policy.default == "edge-only"
    assert settings.database_url.startswith("sqlite:///")


def test_environment_overrides_the_file(monkeypatch):
    monkeypatch.setenv("ECGW_EDGE__BASE_URL", "http://10.1.2.3:9000/v1")
    monkeypatch.setenv("ECGW_EDGE__MODEL", "qwen-9b")
    monkeypatch.setenv("ECGW_CLOUD__MODEL", "openai/gpt-5.4")
    monkeypatch.setenv("ECGW_CLOUD__API_BASE", "http://cloud.local/v1")
    monkeypatch.setenv("ECGW_CLOUD__API_KEY_ENV", "MY_KEY")
    monkeypatch.setenv("ECGW_POLICY__DEFAULT", "cloud-only")
    monkeypatch.setenv("ECGW_SERVER__PORT", "4555")
    monkeypatch.setenv("ECGW_DATABASE_URL", "postgresql://u:p@db/ecgw")
    s = load_settings(ROOT / "config.yaml")
    assert (s.edge.base_url, s.edge.model, s.cloud.model, s.cloud.api_base, s.cloud.api_key_env) == (
        "http://10.1.2.3:9000/v1", "qwen-9b", "openai/gpt-5.4", "http://cloud.local/v1", "MY_KEY")
    assert (s.policy.default, s.server.port, s.database_url) == ("cloud-only", 4555, "postgresql://u:p@db/ecgw")
    assert s.server.host == "127.0.0.1"  # untouched keys keep the file's value


def test_bad_value_names_key_value_and_expectation(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("server:\n  port: seventy\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = str(info.value)
    assert "server.port" in message and "'seventy'" in message and "integer" in message


def test_unknown_key_is_named(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("edge:\n  base_ulr: http://x\n")
    with pytest.raises(ConfigError, match=r"edge\.base_ulr: unknown key"):
        load_settings(path)


def test_not_yaml_and_missing_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("server: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(path)
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(tmp_path / "missing.yaml")


def test_ecgw_serve_with_a_bad_config_exits_2_without_a_traceback(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("policy:\n  default: 12\nserver:\n  port: -4\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "serve", "--config", str(path)],
                            capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert result.returncode == 2
    assert "server.port" in result.stderr and "-4" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_default_policy_fails_at_start(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("policy:\n  default: turbo\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ECGW_")}
    result = subprocess.run([sys.executable, "-m", "gateway.cli", "serve", "--config", str(path)],
                            capture_output=True, text=True, env=env, timeout=60, cwd=ROOT)
    assert result.returncode == 2
    assert "turbo" in result.stderr and "edge-only" in result.stderr and "Traceback" not in result.stderr


def test_command_line_beats_environment_beats_file(tmp_path, monkeypatch):
    path = tmp_path / "c.yaml"
    path.write_text("server:\n  port: 4100\n  host: 0.0.0.0\nedge:\n  model: from-file\n")
    monkeypatch.setenv("ECGW_SERVER__PORT", "4200")
    monkeypatch.setenv("ECGW_EDGE__MODEL", "from-env")
    s = load_settings(path, server={"port": 4300})
    assert (s.server.port, s.server.host, s.edge.model) == (4300, "0.0.0.0", "from-env")
    assert load_settings(path).server.port == 4200


def test_a_bad_environment_value_names_its_key(monkeypatch):
    monkeypatch.setenv("ECGW_SERVER__PORT", "many")
    with pytest.raises(ConfigError, match=r"server\.port: got 'many'"):
        load_settings(None)
