"""Score a protector on the held-out corpus: weighted leak per family, and the share of needed strings that survive.

The scan is independent of the detectors: every key and string of the body that would leave is normalised (NFKC,
zero-width characters dropped, HTML entities and %-escapes decoded) and each value is searched with any
separators between its letters and digits, case-insensitively.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from benchmarks.recall.corpus import Case
from benchmarks.recall.values import FAMILIES, Value

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_SEP = r"[^A-Za-z0-9\u4e00-\u9fff]{0,3}"  # any separators, '@' and '%' included


def normalised_text(body: dict[str, Any]) -> str:
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                parts.append(str(k))
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif value is not None:
            parts.append(str(value))

    walk(body)
    text = "\n".join(parts)
    text = unicodedata.normalize("NFKC", text).translate(_ZERO_WIDTH)
    return urllib.parse.unquote(html.unescape(text))


def value_pattern(secret: str) -> re.Pattern[str]:
    chars = [c for c in unicodedata.normalize("NFKC", urllib.parse.unquote(secret)) if c.isalnum()]
    return re.compile(r"(?<![A-Za-z0-9])" + _SEP.join(map(re.escape, chars)) + r"(?![A-Za-z0-9])", re.IGNORECASE)


def leaked(value: Value, sent: str) -> bool:
    return value_pattern(value.secret).search(sent) is not None


@dataclass
class Figures:
    weight: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    leaked: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    weight_all: float = 0.0
    leaked_all: float = 0.0
    needed: int = 0
    kept: int = 0
    leaks: list[tuple[str, str, str]] = field(default_factory=list)
    blocked: int = 0  # cases the last check kept off the cloud
    cases: int = 0

    def add(self, case: Case, sent: dict[str, Any]) -> None:
        self.cases += 1
        text = normalised_text(sent)
        raw = "\n".join([json.dumps(sent, ensure_ascii=False), text])
        for value in case.values:
            hit = leaked(value, text)
            self.weight_all += value.weight
            self.leaked_all += value.weight * hit
            if not value.detectable:
                continue
            self.weight[value.family] += value.weight
            if hit:
                self.leaked[value.family] += value.weight
                self.leaks.append((case.id, value.family, value.field))
        for needed in case.needed:
            self.needed += 1
            self.kept += needed in raw

    def leak(self, family: str | None = None) -> float:
        if family is None:
            total = sum(self.weight.values())
            return sum(self.leaked.values()) / total if total else 0.0
        return self.leaked[family] / self.weight[family] if self.weight[family] else 0.0

    def survival(self) -> float:
        return self.kept / self.needed if self.needed else 1.0

    def table(self, title: str) -> str:
        lines = [f"### {title}", "", "| family | weighted leak |", "|---|---|"]
        lines += [f"| {f} | {self.leak(f):.1%} |" for f in FAMILIES]
        lines += [f"| **detectable, all families** | **{self.leak():.1%}** |",
                  f"| all units (incl. list-only) | {self.leaked_all / self.weight_all:.1%} |",
                  f"| needed strings kept | {self.survival():.1%} |",
                  f"| cases kept off the cloud (blocked) | {self.blocked} of {self.cases + self.blocked} |", ""]
        return "\n".join(lines)
