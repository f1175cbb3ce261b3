"""What the settings models say about every setting, read in one place: each field's description and reload class
(``accounting.reloading``) give the paths each part of a configuration snapshot reloads, why any other change waits
for a restart, the annotated ``config.yaml`` and the ``docs/configuration.md`` reference.

    python -m gateway.config.reference            # write config.yaml and docs/configuration.md again
    python -m gateway.config.reference --check    # exit 1 when either differs from what the models say

``config.yaml`` keeps the values it sets that differ from the defaults (what the quickstart needs: the price table,
the edge models' sizes); every other key is there commented out, with its default, under its description.
"""

from __future__ import annotations

import argparse
import sys
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from accounting.reloading import RESTART, Part
from gateway.config.settings import PolicySettings, Settings
from router.policies import builtin_policies

ROOT = Path(__file__).resolve().parents[2]
READ_AT_START = "it is read once, at start"
KNOBS = "policy.knobs"


@dataclass(frozen=True)
class Entry:
    """One settings field where it stands: ``path`` (``*`` for a key of a mapping or an item of a list), its field,
    the reload class it has (its own or its section's) and whether it says so itself."""

    path: str
    info: FieldInfo
    reload: Mapping[str, str]
    declared: bool
    section: type[BaseModel] | None  # a section of its own: its fields follow
    items: type[BaseModel] | None  # a mapping or list of these (``cloud.targets``, ``edge.deployments``)


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def _shape(annotation: Any) -> tuple[type[BaseModel] | None, type[BaseModel] | None]:
    """(the section model, the item model) of a field's annotation."""
    origin = typing.get_origin(annotation)
    if origin in (list, dict):
        inner = _models(typing.get_args(annotation)[-1])
        return None, (inner[0] if inner else None)
    models = _models(annotation)
    return (models[0] if models else None), None


def _declared(info: FieldInfo) -> Mapping[str, str] | None:
    extra = info.json_schema_extra
    return extra if isinstance(extra, Mapping) and "reload" in extra else None  # type: ignore[return-value]


def entries(model: type[BaseModel] = Settings, prefix: str = "",
            inherited: Mapping[str, str] | None = None) -> Iterator[Entry]:
    """Every field under ``model``, depth first, each with its reload class."""
    for name, info in model.model_fields.items():
        own = _declared(info)
        section, items = _shape(info.annotation)
        entry = Entry(f"{prefix}{name}", info, own or inherited or {}, own is not None, section, items)
        yield entry
        if section is not None:
            yield from entries(section, f"{entry.path}.", entry.reload)
        elif items is not None:
            yield from entries(items, f"{entry.path}.*.", entry.reload)


def knob_models() -> dict[str, type[BaseModel]]:
    """Each built-in policy's knobs model (``policy.knobs.<policy>``), for the policies that have knobs."""
    out: dict[str, type[BaseModel]] = {}
    for name, factory in builtin_policies().items():
        policy = getattr(factory, "func", factory)
        model = getattr(policy, "knobs_model", None)
        if isinstance(model, type) and issubclass(model, BaseModel):
            out[name] = model
    return out


@cache
def reload_paths(part: Part) -> tuple[str, ...]:
    """The settings ``part`` of a snapshot rebuilds: every field that says it reloads there and whose section does
    not already say so."""
    return tuple(e.path for e in entries()
                 if e.declared and e.reload.get("reload") == part and "*" not in e.path
                 and _section_reload(e.path) != part)


def _section_reload(path: str) -> str | None:
    parent = path.rpartition(".")[0]
    return _reload_of(parent).get("reload") if parent else None


def _reload_of(path: str) -> Mapping[str, str]:
    """The reload class of a settings path as a reload reports it (``server.api_keys.0.key``, dict keys
    included): that of the deepest field along it."""
    model: type[BaseModel] | None = Settings
    found: Mapping[str, str] = {}
    for key in path.split("."):
        if model is None or key not in model.model_fields:
            break
        info = model.model_fields[key]
        found = _declared(info) or found
        model = _shape(info.annotation)[0]
    return found


def restart_reason(path: str) -> str:
    """Why a change to ``path`` waits for a restart."""
    reload = _reload_of(path)
    return str(reload.get("why", READ_AT_START)) if reload.get("reload") == RESTART else READ_AT_START


# ---- the annotated config.yaml


def _default(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return PydanticUndefined
    else:
        value = info.default
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def _flow(value: Any) -> str:
    text: str = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10**6, sort_keys=False)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _comment(text: str, indent: str, width: int = 118) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(indent) + 2 + len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return [f"{indent}# {line}" for line in lines]


def _is_set(value: Any, default: Any) -> bool:
    return default is PydanticUndefined or value != default


def _yaml_block(key: str, value: Any, indent: str) -> list[str]:
    if not isinstance(value, (dict, list)) or not value:
        return [f"{indent}{key}: {_flow(value)}"]
    body = yaml.safe_dump(value, default_flow_style=None, allow_unicode=True, width=110, sort_keys=False)
    return [f"{indent}{key}:", *(f"{indent}  {line}" for line in body.splitlines())]


def _render(model: type[BaseModel], values: Mapping[str, Any], indent: str, commented: bool) -> list[str]:
    """``model``'s keys at ``indent``: each under its description, set (``values``) or commented out with its
    default; a section's keys below it, a mapping's or list's item keys under a commented example."""
    out: list[str] = []
    for name, info in model.model_fields.items():
        if not indent and out:
            out.append("")
        section, items = _shape(info.annotation)
        default = _default(info)
        present = name in values
        here = values.get(name)
        description = info.description or ""
        out += _comment(description, indent)
        if model is PolicySettings and name == "knobs":
            given = here if isinstance(here, Mapping) else {}
            set_any = any(_set_values(m, given.get(p, {})) for p, m in knob_models().items())
            out.append(f"{indent}{'' if set_any and not commented else '# '}knobs:")
            for policy, knob_model in knob_models().items():
                own = _set_values(knob_model, given.get(policy, {}))
                out.append(f"{indent}  {'' if own and not commented else '# '}{policy}:")
                out += _render(knob_model, own, indent + "    ", commented or not own)
            continue
        if section is not None and not (present and not isinstance(here, Mapping) and here is not None):
            sub = _set_values(section, here) if isinstance(here, Mapping) else {}
            show = bool(sub) and not commented
            out.append(f"{indent}{'' if show else '# '}{name}:")
            out += _render(section, sub, indent + "  ", not show)
            continue
        if present and _is_set(here, default) and not commented:
            out += _yaml_block(name, here, indent)
        else:
            shown = "" if default is PydanticUndefined else f" {_flow(default)}"
            out.append(f"{indent}# {name}:{shown}" + ("  (required)" if default is PydanticUndefined else ""))
        if items is not None:
            key = "- " if typing.get_origin(info.annotation) is list else "NAME:"
            out.append(f"{indent}#   {key}" if key == "NAME:" else f"{indent}#   -")
            out += _render(items, {}, indent + "    ", True)
    return out


def _set_values(model: type[BaseModel], values: Any) -> dict[str, Any]:
    """What of ``values`` (a mapping the config file gives for ``model``) differs from the model's defaults."""
    if not isinstance(values, Mapping):
        return {}
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name not in values:
            continue
        section, _ = _shape(info.annotation)
        if model is PolicySettings and name == "knobs":
            given = values[name] or {}
            kept = {p: s for p, m in knob_models().items() if (s := _set_values(m, given.get(p, {})))}
            kept.update({p: v for p, v in given.items() if p not in knob_models()})
            if kept:
                out[name] = kept
        elif section is not None and isinstance(values[name], Mapping):
            if sub := _set_values(section, values[name]):
                out[name] = sub
        elif _is_set(values[name], _default(info)):
            out[name] = values[name]
    return out


HEADER = """\
# edgecloud-gateway configuration: `ecgw serve --config FILE` (default ./config.yaml, or $ECGW_CONFIG_FILE).
# Generated from the settings models (`python -m gateway.config.reference`): every key is here with its
# description; a commented key shows its default, and the keys set are what the quickstart needs. To change a
# description, change its field; to set a value, uncomment it (or add it) and run the generator again to check.
# Every key can be overridden by an environment variable: ECGW_ + the key path in capitals, sections joined by "__"
# (ECGW_EDGE__BASE_URL, ECGW_POLICY__DEFAULT, ECGW_DATABASE_URL). The full reference: docs/configuration.md.
"""


def render_config(values: Mapping[str, Any]) -> str:
    """The annotated config.yaml: every key, the ones ``values`` sets that differ from their defaults set."""
    return HEADER + "\n" + "\n".join(_render(Settings, _set_values(Settings, values), "", False)) + "\n"


# ---- docs/configuration.md


def render_reference() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Every setting, generated from the settings models (`python -m gateway.config.reference`; a test fails when",
        "this page or `config.yaml` differs from what the models say). **Reload**: what `POST /admin/v1/reload` (or",
        "`SIGHUP`) does with a change — `snapshot` (policies, experiments, keys, learning: the next request gets it),",
        "`doors` (the edge pool, the cloud targets, the privacy rules, the prices), `limits` (budgets and rate limits),",
        "or `restart` (kept at its running value, named in `not_reloadable` with the reason shown here). How a reload",
        "works: [operations.md](operations.md#reloading-the-configuration). `*` stands for a key you choose (a target's,",
        "a deployment's, a model's name) or an item of a list.",
    ]
    current = None
    for entry in [*entries(), *_knob_entries()]:
        top = entry.path.split(".")[0] if not entry.path.startswith(KNOBS + ".") else KNOBS
        if top != current:
            current = top
            lines += ["", f"## `{top}`", "", "| key | default | reload | description |", "|---|---|---|---|"]
        default = _default(entry.info)
        if entry.section is not None:
            shown = "(its keys below)"
        else:
            shown = "required" if default is PydanticUndefined else f"`{_flow(default)}`".replace("|", "\\|")
        reload = entry.reload.get("reload", "per key")
        why = f": {entry.reload['why']}" if reload == RESTART and entry.declared else ""
        text = (entry.info.description or "").replace("|", "\\|")
        lines.append(f"| `{entry.path}` | {shown} | {reload}{why} | {text} |")
    return "\n".join(lines) + "\n"


def _knob_entries() -> Iterator[Entry]:
    policy = Settings.model_fields["policy"]
    reload = _declared(policy) or {}
    for name, model in knob_models().items():
        yield from entries(model, f"{KNOBS}.{name}.", reload)


# ---- the command


def expected() -> dict[Path, str]:
    config = ROOT / "config.yaml"
    values = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    return {config: render_config(values), ROOT / "docs" / "configuration.md": render_reference()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gateway.config.reference", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a generated file differs; write nothing")
    args = parser.parse_args(argv)
    stale = []
    for path, text in expected().items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{path.relative_to(ROOT)} {'differs from' if args.check else 'written from'} the settings models",
              file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
