"""The README stays a front door (at most 12 KB) and every page of the manual in docs/ is one link away from it;
every relative link in the README and docs/ reaches a file, and a link's #anchor one of that page's headings."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors for a Markdown page's headings (outside code blocks)."""
    anchors, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            text = re.sub(r"[^\w\- ]", "", match[1].strip().lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


def test_the_readme_is_a_front_door() -> None:
    size = len((ROOT / "README.md").read_bytes())
    assert size <= 12 * 1024, f"README.md is {size} bytes: move the detail into a page of docs/"


def test_every_page_of_docs_is_linked_from_the_readme() -> None:
    linked = {target.split("#")[0] for target in LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))}
    pages = {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    assert sorted(pages - linked) == []


def test_every_relative_link_reaches_its_file_and_heading() -> None:
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []
