"""A prefix cache counted as vLLM counts it, for the doubles that stand in for an edge server (the benchmarks'
prefix stub, the tests' model server): the tokens of a prompt held are the whole blocks of the longest prefix it
shares with an earlier prompt under the same ``cache_salt`` (a different salt never shares a block)."""

from __future__ import annotations

BLOCK = 16  # tokens per block, as vLLM's default block size


class PrefixCache:
    def __init__(self, block: int = BLOCK) -> None:
        self._block = block
        self._seen: dict[str | None, list[list[str]]] = {}

    def cached(self, prompt: list[str], salt: str | None) -> int:
        """The tokens of ``prompt`` already held (never all of them: the last one is always computed); the
        prompt is remembered."""
        best = 0
        for earlier in self._seen.setdefault(salt, []):
            n = 0
            for a, b in zip(earlier, prompt, strict=False):
                if a != b:
                    break
                n += 1
            best = max(best, n)
        self._seen[salt].append(prompt)
        return min((best // self._block) * self._block, max(len(prompt) - 1, 0))

    def clear(self) -> None:
        self._seen.clear()
