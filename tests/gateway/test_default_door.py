"""The own door is the default where it can be (issue 41): ``transport: auto`` sends OpenAI-compatible targets
through the gateway's own transport, every other provider through litellm, and an app built from the default
configuration never imports litellm (~150 MB and ~4 ms of CPU a call it does not need)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gateway.config.settings import CloudSettings, load_settings, resolved_transport


@pytest.mark.parametrize(("model", "door"), [
    ("deepseek/deepseek-chat", "openai"), ("openai/gpt-4o", "openai"), ("gpt-4o", "openai"),
    ("openai/served-by-vllm", "openai"), ("anthropic/claude-sonnet-4", "litellm"), ("bedrock/x", "litellm"),
    ("hosted_vllm/x", "litellm"),
])
def test_auto_picks_the_own_door_for_openais_wire_and_litellm_for_the_rest(model: str, door: str):
    assert resolved_transport("auto", model) == door
    assert resolved_transport("litellm", model) == "litellm"


def test_auto_is_the_default_on_the_cloud_and_on_each_target():
    settings = load_settings(None, cloud={"targets": {"fast": {"model": "openai/gpt-x"},
                                                      "other": {"model": "anthropic/claude-x"}}})
    assert CloudSettings().transport == "auto"
    assert settings.cloud.for_target("fast").transport == "auto"
    assert resolved_transport("auto", settings.cloud.for_target("other").model) == "litellm"


APP = """
import sys
from gateway.app import create_app
from gateway.config.settings import Settings
create_app(Settings(database_url="sqlite:///{db}"))
print("litellm" in sys.modules, "openai" in sys.modules)
"""


def test_an_app_of_the_default_configuration_never_imports_litellm(tmp_path: Path):
    run = subprocess.run([sys.executable, "-c", APP.format(db=tmp_path / "ecgw.db")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["False", "False"]
