"""What a layer keeps of its Linear inputs when its base is frozen (LoRA, QLoRA). Bytes per token.

Korthikanti et al.'s inventory (activations.stored_tensors) keeps every Linear's input because
the weight's gradient needs it. A frozen weight needs none, and PyTorch's autograd saves an
input only for a derivative it will compute (tools/autograd/gen_variable_type.py,
`emit_save_inputs.guard_for`: `mm` keeps `self` only when `mat2` needs a gradient), so
`F.linear(x, W)` with W frozen keeps W, not x. A frozen Linear's input stays when:
  - an adapter sits on the Linear (Hu et al. 2021; PEFT peft/tuners/lora/layer.py
    `Linear.forward`: `lora_B(lora_A(dropout(x)))`, one dropout per adapted module;
    lit_gpt/lora.py the same once for its fused q/k/v). Without LoRA dropout A's matmul keeps
    x itself; with it, each adapter keeps its own dropped-out copy and the dropout's mask
    (1 byte: `native_dropout` saves a bool mask, PyTorch derivatives.yaml), not x. PEFT's
    fp32 adapters (`autocast_adapter_dtype`, its default) make a copy per adapter even
    without dropout: `_cast_input_dtype` casts x to fp32 and autocast casts it back to a
    fresh 16-bit tensor for A's matmul, which keeps it (stacks.Stack.adapter_input_copies).
    B's matmul keeps A's rank-r output;
  - the base is quantised and its autograd function keeps the input
    (stacks.Stack.quantised_input_bytes: bitsandbytes up to 0.43 for 4-bit, every version for
    8-bit);
  - another function keeps the same tensor: flash attention keeps its output O, the
    O-projection's input (FlashAttention-2's backward reads O; Dao 2023, Algorithm 2).
What attention, the norms and the activation function keep they need whatever the weights
(q, k, v, the norms' inputs, the activation's inputs), so that part of the inventory stays.
Dense layers of standard attention only: MLA latents and routed experts keep their full
inventory (an over-count for a frozen base, the safe side).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.stacks import Stack

ALL_TARGETS = frozenset({"q", "k", "v", "o", "gate", "up", "down"})
DROPOUT_MASK_BYTES = 1.0  # a bool per element


@dataclass(frozen=True)
class FrozenBase:
    """A fine-tune's frozen base as the backward pass sees it."""

    targets: frozenset[str]  # the Linear layers with adapters
    dropout: bool  # LoRA dropout above 0
    rank: int
    quantised_input_bytes: float  # kept per element of each base Linear's input (0: none)
    fused_qkv: bool  # one q/k/v projection (one adapter, one dropout copy)
    adapter_scatter_kept: bool  # the q/k/v adapters' outputs kept by a scatter
    adapter_copies: bool  # each adapter keeps its own copy of its input, dropout or not


def frozen_base_of(
    stack: Stack, *, base_format: str, rank: int, targets: frozenset[str], dropout: float
) -> FrozenBase:
    """The frozen base of a LoRA/QLoRA run on `stack` with its base stored in `base_format`."""
    if base_format in ("nf4", "int4"):
        quantised = stack.quantised_input_bytes[0]
    elif base_format == "int8":
        quantised = stack.quantised_input_bytes[1]
    else:
        quantised = 0.0
    return FrozenBase(
        targets=targets,
        dropout=dropout > 0,
        rank=rank,
        quantised_input_bytes=quantised,
        fused_qkv=stack.fused_qkv,
        adapter_scatter_kept=stack.adapter_scatter_kept,
        adapter_copies=stack.adapter_input_copies,
    )


def kept_input_bytes(
    fb: FrozenBase, width: float, *, adapted: int, e: float, kept_anyway: bool = False
) -> float:
    """Bytes per token kept of one Linear input `width` wide that `adapted` adapter modules
    read (`kept_anyway`: another function keeps the tensor itself). Each adapter keeps its
    own copy (and, with dropout, the mask) when dropout or the stack's casts make one;
    otherwise A's matmul keeps the input itself, once for all the modules that read it."""
    own_copies = fb.dropout or fb.adapter_copies
    own = e if kept_anyway or (adapted and not own_copies) else 0.0
    own = max(own, fb.quantised_input_bytes * e / 2.0)
    per_copy = e + (DROPOUT_MASK_BYTES if fb.dropout else 0.0)
    copies = adapted * per_copy if own_copies else 0.0
    return width * (own + copies) + adapted * e * fb.rank


@dataclass(frozen=True)
class FrozenInputs:
    """Per token, a dense layer's Linear inputs kept with a frozen base: `replicated` the two
    norms' outputs (q/k/v and MLP inputs), `split` the attention output and the MLP's
    down-projection input (the same split as activations.Stored)."""

    replicated: float
    split: float


def frozen_linear_inputs(
    arch: Arch, fb: FrozenBase, *, e: float, flash_attention: bool
) -> FrozenInputs:
    """The Linear-input part of one dense layer's inventory with a frozen base."""
    t = fb.targets
    qkv = [x for x in ("q", "k", "v") if x in t]
    adapted_qkv = min(1, len(qkv)) if fb.fused_qkv else len(qkv)
    mlp_in = [x for x in (("gate", "up") if arch.gated_ffn else ("up",)) if x in t]
    h = float(arch.hidden)
    rep = kept_input_bytes(fb, h, adapted=adapted_qkv, e=e)
    rep += kept_input_bytes(fb, h, adapted=len(mlp_in), e=e)
    attn_out = float(arch.heads * arch.value_head_dim)
    split = kept_input_bytes(fb, attn_out, adapted=int("o" in t), e=e, kept_anyway=flash_attention)
    split += kept_input_bytes(fb, float(arch.ffn), adapted=int("down" in t), e=e)
    if fb.adapter_scatter_kept:
        widths = {"q": arch.heads, "k": arch.kv_heads, "v": arch.kv_heads}
        split += e * arch.head_dim * sum(widths[x] for x in qkv)
    return FrozenInputs(rep, split)
