"""Edge compute per call, in FLOPs, by a named formula.

- ``cache-credit`` (default): 2 · N · (raw_input + output) — prefix-cache hits cost nothing.
- ``no-cache-credit``: 2 · N · (prompt + output).
- optional attention term: 2 · n_layers · context · d_attn per processed token, where ``context`` is the token's
  position (so the term sums over the positions actually computed).
N is the model's active parameter count. The formula's name is stored with every record.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from accounting.settings import EdgeModel
from accounting.usage import Tokens

log = logging.getLogger("ecgw.accounting")


def _position_sum(start: int, end: int) -> int:
    """Σ t for t in [start, end)."""
    if end <= start:
        return 0
    return (start + end - 1) * (end - start) // 2


class FlopsCalculator:
    def __init__(self, models: Mapping[str, EdgeModel], *, formula: str = "cache-credit",
                 attention: bool = False) -> None:
        if formula not in ("cache-credit", "no-cache-credit"):
            raise ValueError(f"unknown FLOPs formula {formula!r}; use cache-credit or no-cache-credit")
        self._models = {k.lower(): v for k, v in models.items()}
        self._credit = formula == "cache-credit"
        self._attention = attention
        self._warned: set[str] = set()
        self._lock = threading.Lock()
        tokens = "raw_input+output" if self._credit else "prompt+output"
        self.formula = f"2*N*({tokens})" + (" + 2*L*ctx*d_attn" if attention else "")

    def _model(self, name: str) -> EdgeModel | None:
        lowered = name.lower()
        model = self._models.get(lowered) or self._models.get(lowered.rsplit("/", 1)[-1])
        if model is None:
            with self._lock:
                if lowered not in self._warned:
                    self._warned.add(lowered)
                    log.warning("edge model %r has no entry in accounting.edge_models; its calls are recorded "
                                "with edge_flops = null. Add its parameter count to config.yaml.", name)
        return model

    def flops(self, model_name: str, tokens: Tokens) -> float | None:
        model = self._model(model_name)
        if model is None:
            return None
        computed_prompt = tokens.raw_input if self._credit else tokens.prompt
        total = 2.0 * model.params * (computed_prompt + tokens.output)
        d_attn = model.d_attn
        if self._attention and model.layers and d_attn:
            # Positions computed: the uncached tail of the prompt (or all of it), then every generated token.
            first = tokens.prompt - computed_prompt
            end = tokens.prompt + tokens.output
            total += 2.0 * model.layers * d_attn * _position_sum(first, end)
        return total
