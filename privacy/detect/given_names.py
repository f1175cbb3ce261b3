"""Given names of many countries, read once per process from the list ``gender-guesser`` ships (``nam_dict.txt``,
~40 000 first names with a frequency per country): what tells a person's name from two capitalised words that are
a vendor, a product or a feature. Words that are also common English words (``Will``, ``May``, ``Page``) count
only where the context says a person is meant."""

from __future__ import annotations

import threading
from importlib import resources

# Given names that are also everyday English words, greetings or container words: never evidence on their own.
_COMMON = frozenset("""the a an and or but hi hello dear thanks thank hey ok yes no not will may can rose hope grace
joy summer winter spring autumn june april august art bill mark pat page chase hack sales sky star honey love
king earl duke baron major sunny rich rocky penny lily iris ivy holly ginger amber ruby pearl jade crystal dawn
faith glory melody harmony liberty justice mercy patience prudence trinity destiny heaven river ocean storm rain
snow stone wolf fox hunter archer cook miller taylor carter mason baker fisher porter smith will bob sue don
jack gene guy ray rob sam roy van von de la le del das der mr mrs ms dr sir lord lady""".split())


class GivenNames:
    """``known(word)``: whether a word is a given name (any case); loaded on first use, once, thread-safe."""

    def __init__(self, min_frequency: str = "1") -> None:
        self._min = min_frequency  # the list's per-country frequency digit (1-9, then A-D), the highest counts
        self._names: frozenset[str] | None = None
        self._lock = threading.Lock()

    def load(self) -> frozenset[str]:
        if self._names is None:
            with self._lock:
                if self._names is None:
                    self._names = self._read()
        return self._names

    def _read(self) -> frozenset[str]:
        names: set[str] = set()
        data = resources.files("gender_guesser").joinpath("data/nam_dict.txt")
        with data.open(encoding="utf-8") as f:
            for line in f:
                if line[:1] in ("#", "=") or len(line) < 31:
                    continue
                name = line[3:29].rstrip()
                if "+" in name or " " in name or "-" in name:
                    continue
                if max(line[30:85].replace(" ", "") or "0") >= self._min:
                    names.add(name.casefold())
        return frozenset(names - _COMMON)

    def known(self, word: str) -> bool:
        return word.casefold() in self.load()
