"""Chinese word segmentation with part-of-speech tags (``jieba.posseg``: ``nr`` person, ``ns`` place, ``nt``
organisation…), from the dictionary and HMM that ship inside the ``jieba`` package: nothing is downloaded. The
tokenizer is built once per process (``privacy.detect.shared_people``) at the gateway's start, or on first use
where nothing started it (``ecgw scrub``), never at import; jieba
keeps a cache of its prefix dictionary in the system's temporary directory (a read-only one only costs time)."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Token:
    word: str
    flag: str
    start: int  # offset in the text given to ``tag``

    @property
    def end(self) -> int:
        return self.start + len(self.word)


class Segmenter(Protocol):
    def tag(self, text: str, scope: str) -> list[Token]:
        """jieba's tokens of ``text``; ``scope``: whose text it is (a cached result is reused only within it)."""
        ...

    def load(self) -> object:
        """Build the tokenizer now (the gateway's start) rather than on the first Chinese text."""
        ...


class JiebaSegmenter:
    """``tag(text, scope)``: jieba's tokens with offsets; results cached per scope and text (equal lines recur in
    every step), so no tenant learns from a fast answer that another sent a text."""

    def __init__(self, cache_entries: int = 20_000) -> None:
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str], list[Token]] = OrderedDict()
        self._cache_entries = cache_entries

    def load(self) -> Any:
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = self._build()
        return self._tokenizer

    def _build(self) -> Any:
        import jieba
        import jieba.posseg

        logging.getLogger("jieba").setLevel(logging.WARNING)
        tokenizer = jieba.Tokenizer()
        tokenizer.initialize()
        return jieba.posseg.POSTokenizer(tokenizer)

    def tag(self, text: str, scope: str) -> list[Token]:
        cached = self._cache.get((scope, text))
        if cached is not None:
            return cached
        tokenizer = self.load()
        tokens: list[Token] = []
        pos = 0
        with self._lock:  # jieba's tokenizers keep state between calls
            pairs = [(p.word, p.flag) for p in tokenizer.cut(text)]
        for word, flag in pairs:
            tokens.append(Token(word, flag, pos))
            pos += len(word)
        self._cache[(scope, text)] = tokens
        if len(self._cache) > self._cache_entries:
            self._cache.popitem(last=False)
        return tokens
