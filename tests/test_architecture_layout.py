"""docs/architecture.md's layout table names every module, each in its folder's row, and names nothing that is
not there: adding, moving or deleting a module without the table following fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gateway", "router", "privacy", "accounting", "eval")


def _rows() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in table.splitlines():
        match = re.match(r"\| `([\w/]+/)` \|(.*)\|$", line)
        if match:
            rows[match[1]] = set(re.findall(r"`([\w.]+\.py)`", match[2]))
    return rows


def _folders() -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {}
    for package in PACKAGES:
        for module in (ROOT / package).rglob("*.py"):
            if module.name != "__init__.py" and "__pycache__" not in module.parts:
                folder = module.parent.relative_to(ROOT).as_posix() + "/"
                folders.setdefault(folder, set()).add(module.name)
    return folders


def test_every_folder_has_a_row_naming_exactly_its_modules() -> None:
    rows, folders = _rows(), _folders()
    assert sorted(set(folders) - set(rows)) == [], "folders without a row in docs/architecture.md's layout table"
    for folder, modules in sorted(folders.items()):
        assert sorted(modules - rows[folder]) == [], f"modules of {folder} the layout table does not name"
        assert sorted(rows[folder] - modules) == [], f"modules the layout table names in {folder} that are not there"



def test_the_test_folders_are_the_ones_named_and_each_is_its_packages() -> None:
    """The tests row's "`tests/X/` (`a/`, `b/`)": the folders holding tests under tests/X/ are exactly those, and
    each is a folder of the package X/ (its tests grouped like the source)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `tests/`"))
    named = {package: set(re.findall(r"`([\w/]+)/`", folders))
             for package, folders in re.findall(r"`tests/(\w+)/` \(([^)]*)\)", row)}
    assert named, "the tests row names no grouped test folder"
    for package, folders in named.items():
        base = ROOT / "tests" / package
        actual = {d.relative_to(base).as_posix() for d in base.rglob("*") if d.is_dir() and any(d.glob("test_*.py"))}
        assert actual == folders, f"tests/{package}/'s folders are {sorted(actual)}, the table says {sorted(folders)}"
        assert [f for f in folders if not (ROOT / package / f).is_dir()] == [], f"test folders {package}/ lacks"
