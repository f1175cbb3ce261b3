"""Each setting is described once, on its pydantic field, with the reload class that says what a reload does with
it; config.yaml and docs/configuration.md are generated from the models, and the reload lists derived from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from accounting.reloading import DOORS, LIMITS, SNAPSHOT, reloads, restart
from gateway.config.reference import _knob_entries, entries, expected, reload_paths, restart_reason

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["config.yaml", "docs/configuration.md"])
def test_the_committed_copy_is_what_the_models_say(name: str) -> None:
    text = expected()[ROOT / name]
    assert (ROOT / name).read_text(encoding="utf-8") == text, (
        f"{name} differs from the settings models: run `make config` (python -m gateway.config.reference)")


def test_every_setting_has_a_description_and_a_reload_class() -> None:
    every = [*entries(), *_knob_entries()]
    assert len(every) > 150
    assert [e.path for e in every if not (e.info.description or "").strip()] == []
    # a section may leave its class to its keys (edge: most reload with the doors, launch* at a restart)
    assert [e.path for e in every if e.section is None
            and e.reload.get("reload") not in ("snapshot", "doors", "limits", "restart")] == []


def test_the_reload_lists_come_from_the_fields() -> None:
    assert reload_paths(LIMITS) == ("limits",)
    assert {"policy", "experiments", "learning", "server.api_keys"} <= set(reload_paths(SNAPSHOT))
    assert {"cloud", "edge.base_url", "privacy.last_check", "accounting.prices"} <= set(reload_paths(DOORS))
    assert not {"edge.launch", "privacy.audit", "accounting.writer"} & set(reload_paths(DOORS))
    # a field's own class wins over its section's; a path deeper than any field takes the deepest field's
    assert restart_reason("server.port") == restart_reason("server.max_json_depth") != restart_reason("edge.launch")
    assert restart_reason("edge.launch_args") == restart_reason("edge.launch")
    assert "writer" in restart_reason("privacy.audit") and "prices reload" in restart_reason("accounting.writer.batch_size")


def test_a_field_says_its_class_and_its_section_gives_it_to_the_rest() -> None:
    class Inner(BaseModel):
        quick: int = Field(1, json_schema_extra=reloads(DOORS), description="q")
        slow: int = Field(2, description="s")

    class Outer(BaseModel):
        inner: Inner = Field(default_factory=Inner, json_schema_extra=restart("built at start"), description="i")

    found = {e.path: e.reload for e in entries(Outer)}
    assert found == {"inner": {"reload": "restart", "why": "built at start"},
                     "inner.quick": {"reload": "doors"}, "inner.slow": {"reload": "restart", "why": "built at start"}}
