"""What autograd keeps for LitGPT's LoRA forward, counted on CPU: a check of estimate/frozenbase.py.

    git -C litgpt checkout 8641822          # the commit of LitGPT's resource tables
    python benchmarks/validation_saved_tensors.py --litgpt litgpt [--seq 256]

Needs PyTorch (not a dependency of the project) and a LitGPT checkout; no GPU, no weights (the
layers are initialised at random, which changes no tensor's size). It builds Llama-2-7B's
LitGPT LoRA model (r 8 on q and v, dropout 0.05, as finetune/lora.py @8641822) with one and
with two layers in bf16, runs the training forward and the chunked loss, walks the autograd
graph from the loss and adds up the distinct storages its nodes saved (parameters and buffers
excluded). The difference of the two is one layer's inventory, printed per tensor kind in
units of h bytes per token, beside the model's figure (`layer_activation_bytes` with the
litgpt stack). What a custom autograd function keeps as a plain attribute (bitsandbytes'
`ctx.tensors`) is invisible to this walk, so it checks the 16-bit inventory only; CPU
dropout keeps a mask of the input's dtype where CUDA's `native_dropout` keeps a bool.

Measured 2026-12-06 (torch 2.13.0+cpu, seq 256): 40.23·h per layer, of which the dropout
mask 2·h (1·h on CUDA): 39.23·h against the model's 39.13·h.
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


def measure(seq: int) -> tuple[float, collections.Counter[str]]:
    """One layer's saved bytes per token and its split by kind (two layers minus one)."""
    import torch
    from lit_gpt.lora import GPT, Config, mark_only_lora_as_trainable

    torch.manual_seed(0)
    totals, kinds = {}, {}
    for layers in (1, 2):
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
        totals[layers], kinds[layers] = saved_by_kind(model, _chunked_loss(logits, idx[..., 1:]))
    per_layer = kinds[2].copy()
    per_layer.subtract(kinds[1])
    return (totals[2] - totals[1]) / seq, per_layer


def modelled(seq: int) -> float:
    """The model's bytes per token of the same layer (layer_activation_bytes, litgpt stack)."""
    from gpusolve.estimate import resolve_arch
    from gpusolve.estimate.activations import layer_activation_bytes
    from gpusolve.estimate.frozenbase import frozen_base_of
    from gpusolve.estimate.memory import NO_SAVINGS
    from gpusolve.estimate.stacks import eager_saved_bytes_per_token, stack_named
    from gpusolve.models.requirements import ModelShape

    arch = resolve_arch(ModelShape(preset="llama-2-7b"))
    stack = stack_named("litgpt")
    fb = frozen_base_of(
        stack, base_format="bf16", rank=8, targets=frozenset({"q", "v"}), dropout=0.05
    )
    return layer_activation_bytes(
        arch, moe_layer=False, seq=seq, micro_batch=1, tp=1, sequence_parallel=False,
        checkpointing="none", flash_attention=True, act_bytes=2, dropout=False,
        savings=NO_SAVINGS, frozen=fb,
        extra_per_token=eager_saved_bytes_per_token(arch, stack, tp=1, act_bytes=2),
    ) / seq  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--litgpt", type=Path, required=True, help="a LitGPT checkout (8641822)")
    ap.add_argument("--seq", type=int, default=256, help="tokens of the one sequence")
    args = ap.parse_args()
    if not (args.litgpt / "lit_gpt" / "lora.py").is_file():
        print(f"{args.litgpt}: no lit_gpt/lora.py (check out LitGPT 8641822)", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("this check needs PyTorch (pip install torch)", file=sys.stderr)
        return 2
    _stub_lightning()
    sys.path.insert(0, str(args.litgpt))
    h = 4096
    per_token, kinds = measure(args.seq)
    for kind, nbytes in sorted(kinds.items()):
        if nbytes:
            print(f"  {kind:<60} {nbytes / args.seq / h:6.2f}·h")
    print(f"saved per layer: {per_token / h:.2f}·h bytes per token (CPU)")
    print(f"the model:       {modelled(args.seq) / h:.2f}·h (CUDA's 1-byte dropout mask)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
