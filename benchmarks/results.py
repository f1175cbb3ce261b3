"""The one file every benchmark appends its dated section to: ``benchmarks/RESULTS.md``."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def append(text: str) -> None:
    with RESULTS.open("a", encoding="utf-8") as out:
        out.write(text)
