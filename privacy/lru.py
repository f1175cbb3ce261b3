"""A least-recently-used map bounded twice: by entries and by an estimate of the memory its values hold.

The per-session caches of the protector hold what a step's scrub made (a 20 KB system prompt's result with its
~750 findings and their audit rows is ~1.4 MB): bounded by entries alone, a few hundred sessions of long prompts
reach gigabytes. Each value is weighed once, when it is put, by the owner's ``weigh``; the oldest entries go until
both bounds hold. A miss only costs a scrub again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class WeighedLRU(Generic[K, V]):
    def __init__(self, entries: int, max_bytes: int, weigh: Callable[[V], int]) -> None:
        self._entries = entries
        self._max_bytes = max_bytes
        self._weigh = weigh
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0

    @property
    def weight(self) -> int:
        """The estimate of what the entries held now weigh."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._data))

    def get(self, key: K) -> V | None:
        found = self._data.get(key)
        if found is None:
            return None
        self._data.move_to_end(key)
        return found[0]

    def put(self, key: K, value: V) -> None:
        self.pop(key)
        weight = self._weigh(value)
        self._data[key] = (value, weight)
        self._bytes += weight
        while self._data and (len(self._data) > self._entries or self._bytes > self._max_bytes):
            _, (_, gone) = self._data.popitem(last=False)
            self._bytes -= gone

    def pop(self, key: K) -> None:
        found = self._data.pop(key, None)
        if found is not None:
            self._bytes -= found[1]
