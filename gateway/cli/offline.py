"""Make the libraries we depend on work without a network, before any of them is imported."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def prepare_offline_environment() -> None:
    """litellm fetches its cost map on import unless told not to; tiktoken downloads BPE files unless pointed
    at the ones litellm ships; presidio's email recognizer fetches a suffix list. Respect what the user set."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        spec = importlib.util.find_spec("litellm")
        if spec is not None and spec.origin is not None:
            tokenizers = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
            if tokenizers.is_dir():
                os.environ["TIKTOKEN_CACHE_DIR"] = str(tokenizers)
