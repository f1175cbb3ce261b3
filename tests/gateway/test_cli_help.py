"""The command line explains itself: every sub-command and option has help (with its default), `ecgw --version`
says the version, `make help` lists the targets."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from gateway.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _parsers(parser: argparse.ArgumentParser, path: str = "ecgw") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helped = {choice.dest for choice in action._choices_actions if choice.help}
            for name, sub in action.choices.items():
                assert name in helped, f"`{path} {name}` has no help line"
                found += _parsers(sub, f"{path} {name}")
    return found


def test_every_subcommand_and_option_has_help_and_shows_its_default(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "10000")  # one line per option: no wrapping inside a default
    parsers = _parsers(build_parser())
    assert len(parsers) > 8
    for path, parser in parsers:
        for action in parser._actions:
            if not isinstance(action, argparse._SubParsersAction):  # its sub-commands' lines are checked above
                assert action.help, f"`{path}`: {action.option_strings or action.dest} has no help"
        text = parser.format_help()
        for action in parser._actions:
            shown = action.option_strings and action.default not in (None, False, argparse.SUPPRESS)
            if shown:
                assert re.search(rf"default:? {re.escape(str(action.default))}", text), (
                    f"`{path} --help` does not show the default of {action.option_strings[0]} ({action.default!r})")


def test_version() -> None:
    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    done = subprocess.run([sys.executable, "-m", "gateway.cli", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"ecgw {expected}"


def test_make_help_lists_the_targets() -> None:
    makefile = (ROOT / "Makefile").read_text()
    targets = {t for line in re.findall(r"^\.PHONY:(.*)$", makefile, re.M) for t in line.split()}
    done = subprocess.run(["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0
    listed = set(re.findall(r"^\s+make (\S+)\s+\S", done.stdout, re.M))
    assert targets <= listed, f"not in `make help`: {sorted(targets - listed)}"
