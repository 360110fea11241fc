"""What autograd keeps for a LoRA forward, counted on CPU: a check of estimate/frozenbase.py.

    git -C litgpt checkout 8641822          # the commit of LitGPT's resource tables
    python benchmarks/validation_saved_tensors.py --litgpt litgpt [--seq 256]
    python benchmarks/validation_saved_tensors.py --peft [--dropout 0.05]

Needs PyTorch (not a dependency of the project) and a LitGPT checkout, or transformers and
PEFT; no GPU, no weights (layers initialised at random, which changes no tensor's size).
`--litgpt` builds Llama-2-7B's LitGPT LoRA model (r 8 on q and v, dropout 0.05, as
finetune/lora.py @8641822) in bf16; `--peft` a Llama of the same proportions (h 512, f 1,376:
f/h as Llama-2-7B's) from transformers, in bf16, with PEFT's all-linear LoRA (r 8, fp32
adapters, PEFT's default) under bf16 autocast (HF Trainer's `bf16=True`). Each runs the
training forward and the loss with one and with two layers, walks the autograd graph from
the loss and adds up the distinct storages its nodes saved (parameters and buffers
excluded); the difference is one layer, printed per tensor kind in units of h bytes per
token, beside the model's figure (`layer_activation_bytes` with the litgpt or hf stack).
What a custom autograd function keeps as a plain attribute (bitsandbytes' `ctx.tensors`) is
invisible to this walk, so it checks 16-bit bases only. CPU dropout keeps a mask of its
input's dtype (2 bytes in LitGPT, 4 under PEFT's fp32 cast) where CUDA's `native_dropout`
keeps a bool; autocast's cast of each adapter's weight counts once per layer here
(`MmBackward0._saved_mat2`), a weight, not an activation.

Measured 2026-12-06, torch 2.13.0+cpu: LitGPT (seq 256) 40.23·h per layer, of which the
dropout mask 2·h (1·h on CUDA): 39.23·h against the model's 39.13·h. PEFT (seq 128,
dropout 0) 52.18·h, 49.80·h without the cast weights, against the model's 49.72·h; with
dropout 0.05 86.93·h, 58.49·h without the cast weights and with bool masks (the CPU masks
are fp32 after PEFT's cast: 4 bytes on 8.69·h elements), against the model's 58.41·h.
"""

from __future__ import annotations

import argparse
import collections
import sys
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "solver"))


def _stub_lightning() -> None:
    """lit_gpt imports lightning for its training helpers only; the model code needs none."""

    class _Anything(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            return type(name, (), {})

    for name in (
        "lightning",
        "lightning.fabric",
        "lightning.fabric.strategies",
        "lightning.fabric.utilities",
        "lightning.fabric.utilities.load",
    ):
        sys.modules.setdefault(name, _Anything(name))
    imports = types.ModuleType("lightning_utilities.core.imports")
    # Lightning present (lit_gpt/__init__.py insists), flash-attn absent (SDPA's path).
    imports.RequirementCache = lambda spec: spec.startswith("lightning")  # type: ignore[attr-defined]
    for name in ("lightning_utilities", "lightning_utilities.core"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["lightning_utilities.core.imports"] = imports


def saved_by_kind(model: Any, loss: Any) -> tuple[int, collections.Counter[str]]:
    """Bytes of the distinct storages the graph behind `loss` saved, and by node and slot."""
    import torch

    skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
    skip |= {b.untyped_storage().data_ptr() for b in model.buffers()}
    seen: dict[int, int] = {}
    kinds: collections.Counter[str] = collections.Counter()
    stack, visited = [loss.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or fn in visited:
            continue
        visited.add(fn)
        for name in dir(fn):
            if not name.startswith("_saved_"):
                continue
            try:
                value = getattr(fn, name)
            except RuntimeError:
                continue
            for t in value if isinstance(value, tuple | list) else [value]:
                if not isinstance(t, torch.Tensor) or t.numel() == 0:
                    continue
                ptr = t.untyped_storage().data_ptr()
                if ptr in skip or ptr in seen:
                    continue
                seen[ptr] = t.untyped_storage().nbytes()
                kinds[f"{type(fn).__name__}.{name}"] += seen[ptr]
        stack.extend(nxt for nxt, _ in fn.next_functions)
    return sum(seen.values()), kinds


def _chunked_loss(logits: list[Any], targets: Any) -> Any:
    """lit_gpt/utils.py `chunked_cross_entropy` @8641822, its list branch."""
    import torch

    chunks = [c.reshape(-1, c.size(-1)) for c in logits]
    target_chunks = [t.reshape(-1) for t in targets.split(logits[0].size(1), dim=1)]
    losses = [
        torch.nn.functional.cross_entropy(c, t, ignore_index=-1, reduction="none")
        for c, t in zip(chunks, target_chunks, strict=True)
    ]
    return torch.cat(losses).mean()


def _per_layer(build: Any, seq: int) -> tuple[float, collections.Counter[str]]:
    """One layer's saved bytes per token and its split by kind: `build(layers)` returns the
    model and its loss; two layers minus one."""
    totals, kinds = {}, {}
    for layers in (1, 2):
        model, loss = build(layers)
        totals[layers], kinds[layers] = saved_by_kind(model, loss)
    per_layer = kinds[2].copy()
    per_layer.subtract(kinds[1])
    return (totals[2] - totals[1]) / seq, per_layer


def measure_litgpt(seq: int) -> tuple[float, collections.Counter[str]]:
    """LitGPT @8641822's Llama-2-7B LoRA as finetune/lora.py configures it."""
    import torch
    from lit_gpt.lora import GPT, Config, mark_only_lora_as_trainable

    def build(layers: int) -> tuple[Any, Any]:
        torch.manual_seed(0)
        config = Config.from_name(
            "Llama-2-7b-hf", n_layer=layers, r=8, alpha=16, dropout=0.05, to_query=True,
            to_value=True, to_key=False, to_projection=False, to_mlp=False, to_head=False,
        )  # fmt: skip
        torch.set_default_dtype(torch.bfloat16)
        model = GPT(config)
        torch.set_default_dtype(torch.float32)
        model.max_seq_length = seq
        mark_only_lora_as_trainable(model)
        idx = torch.randint(0, config.padded_vocab_size, (1, seq))
        logits = model(idx, lm_head_chunk_size=128)
        logits[-1] = logits[-1][..., :-1, :]
        return model, _chunked_loss(logits, idx[..., 1:])

    return _per_layer(build, seq)


PEFT_SHAPE = {"hidden": 512, "ffn": 1376, "heads": 8, "vocab": 1000}


def measure_peft(seq: int, dropout: float) -> tuple[float, collections.Counter[str]]:
    """transformers' Llama with PEFT's all-linear LoRA (r 8) under bf16 autocast."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    def build(layers: int) -> tuple[Any, Any]:
        torch.manual_seed(0)
        config = LlamaConfig(
            hidden_size=PEFT_SHAPE["hidden"], intermediate_size=PEFT_SHAPE["ffn"],
            num_hidden_layers=layers, num_attention_heads=PEFT_SHAPE["heads"],
            num_key_value_heads=PEFT_SHAPE["heads"], vocab_size=PEFT_SHAPE["vocab"],
            attn_implementation="sdpa",
        )  # fmt: skip
        base = LlamaForCausalLM(config).to(torch.bfloat16)
        model = get_peft_model(
            base, LoraConfig(r=8, target_modules="all-linear", lora_dropout=dropout)
        )
        model.train()
        idx = torch.randint(0, PEFT_SHAPE["vocab"], (1, seq))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(input_ids=idx, labels=idx).loss
        return model, loss

    return _per_layer(build, seq)


def modelled(shape: Any, stack_name: str, targets: frozenset[str], dropout: float) -> float:
    """The model's bytes per token of one such layer (layer_activation_bytes)."""
    from gpusolve.estimate import resolve_arch
    from gpusolve.estimate.activations import layer_activation_bytes
    from gpusolve.estimate.frozenbase import frozen_base_of
    from gpusolve.estimate.memory import NO_SAVINGS
    from gpusolve.estimate.stacks import eager_saved_bytes_per_token, stack_named

    arch = resolve_arch(shape)
    stack = stack_named(stack_name)
    fb = frozen_base_of(stack, base_format="bf16", rank=8, targets=targets, dropout=dropout)
    return layer_activation_bytes(
        arch, moe_layer=False, seq=1, micro_batch=1, tp=1, sequence_parallel=False,
        checkpointing="none", flash_attention=True, act_bytes=2, dropout=False,
        savings=NO_SAVINGS, frozen=fb,
        extra_per_token=eager_saved_bytes_per_token(arch, stack, tp=1, act_bytes=2),
    )  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = ap.add_mutually_exclusive_group(required=True)
    which.add_argument("--litgpt", type=Path, help="a LitGPT checkout (8641822)")
    which.add_argument("--peft", action="store_true", help="transformers + PEFT (installed)")
    ap.add_argument("--seq", type=int, default=None, help="tokens of the one sequence")
    ap.add_argument("--dropout", type=float, default=0.0, help="LoRA dropout (--peft)")
    args = ap.parse_args()
    if args.litgpt is not None and not (args.litgpt / "lit_gpt" / "lora.py").is_file():
        print(f"{args.litgpt}: no lit_gpt/lora.py (check out LitGPT 8641822)", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("this check needs PyTorch (pip install torch)", file=sys.stderr)
        return 2
    from gpusolve.estimate.frozenbase import ALL_TARGETS
    from gpusolve.models.requirements import ModelShape

    if args.litgpt is not None:
        _stub_lightning()
        sys.path.insert(0, str(args.litgpt))
        seq, h = args.seq or 256, 4096
        per_token, kinds = measure_litgpt(seq)
        shape, stack, targets, dropout = ModelShape(preset="llama-2-7b"), "litgpt", {"q", "v"}, 0.05
    else:
        seq, h = args.seq or 128, PEFT_SHAPE["hidden"]
        per_token, kinds = measure_peft(seq, args.dropout)
        shape = ModelShape(layers=2, kv_heads=PEFT_SHAPE["heads"], **PEFT_SHAPE)
        stack, targets, dropout = "hf", set(ALL_TARGETS), args.dropout
    for kind, nbytes in sorted(kinds.items()):
        if nbytes:
            print(f"  {kind:<60} {nbytes / seq / h:6.2f}·h")
    model = modelled(shape, stack, frozenset(targets), dropout)
    print(f"saved per layer: {per_token / h:.2f}·h bytes per token (CPU)")
    print(f"the model:       {model / h:.2f}·h (CUDA's 1-byte dropout mask)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
