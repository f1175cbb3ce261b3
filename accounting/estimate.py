"""Token counts from text, for upstreams that report no usage (llama-cpp-python's server when streaming).

Uses tiktoken with the BPE files litellm ships (``gateway.cli.offline`` points ``TIKTOKEN_CACHE_DIR`` at them), so it
works offline. The count follows OpenAI's chat recipe: 3 tokens per message, 1 per name, 3 to prime the reply.
It is an estimate for any model whose tokenizer differs — the record says so (``usage_source = "estimated"``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from accounting.usage import Tokens


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


class TokenEstimator:
    """Loads its encoding on first use (never at import), then counts; thread-safe."""

    def __init__(self, encoding_name: str = "o200k_base") -> None:
        self._encoding_name = encoding_name
        self._encoding: _Encoding | None = None
        self._lock = threading.Lock()

    def _enc(self) -> _Encoding:
        if self._encoding is None:
            with self._lock:
                if self._encoding is None:
                    import tiktoken

                    self._encoding = tiktoken.get_encoding(self._encoding_name)
        return self._encoding

    def count(self, text: str) -> int:
        return len(self._enc().encode_ordinary(text)) if text else 0

    def prompt_tokens(self, body: Mapping[str, Any] | None) -> int:
        if not body:
            return 0
        total = 3
        for message in body.get("messages") or ():
            if not isinstance(message, Mapping):
                continue
            total += 3 + self.count(str(message.get("role") or ""))
            content = message.get("content")
            if isinstance(content, str):
                total += self.count(content)
            elif isinstance(content, list):
                for part in content:
                    if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                        total += self.count(part["text"])
            if message.get("name"):
                total += 1 + self.count(str(message["name"]))
            for call in message.get("tool_calls") or ():
                total += self.count(json.dumps(call, sort_keys=True, ensure_ascii=False))
        tools = body.get("tools")
        if tools:
            total += self.count(json.dumps(tools, sort_keys=True, ensure_ascii=False))
        return total

    def estimate(self, body: Mapping[str, Any] | None, output_text: str) -> Tokens:
        """No cache is assumed: an estimate cannot know what the upstream had cached."""
        return Tokens(prompt=self.prompt_tokens(body), cache_read=0, cache_write=0, output=self.count(output_text))
