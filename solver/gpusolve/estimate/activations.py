"""Memory per GPU that flows with the tokens: stored activations and the KV cache. Bytes.

Activations follow Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", §4 (2-byte activations, per layer, per micro-batch):
  no recomputation ............ s·b·h·(34 + 5·a·s/h)
  tensor parallel t, no SP .... s·b·h·(10 + 24/t + 5·a·s/(h·t))
  tensor + sequence parallel .. s·b·h·(34 + 5·a·s/h)/t
  selective recomputation ..... s·b·h·34/t (with SP; 10 + 24/t without)
  full recomputation .......... 2·s·b·h (/t with SP): only each layer's input is kept
Flash attention never materialises the a·s² score matrices, so it stores what selective
recomputation stores (34·s·b·h). The constants assume ffn = 4h and one K/V per head; for
SwiGLU and grouped-query attention they are the paper's approximation; `activation_bytes_per_layer`
keeps them as the published reference.

The training estimate counts a layer's stored tensors one by one instead (`stored_tensors`):
the same inventory as Korthikanti's (a GPT layer with dropout gives exactly 34·s·b·h), with
the real widths of grouped-query K/V, MLA latents and SwiGLU, dropout masks only when dropout
is on, and the named memory savings of the frontier reports (`Savings`) removing or shrinking
tensors. Each pipeline rank is then sized on its own (`stage_activations_bytes`): the parameters the
framework places on it (embedding on the first stage, the output layer on the last, uneven
splits as given) and the micro-batches its schedule keeps in flight.

The KV cache of serving: `kv_cache_bytes` and its per-token and per-element figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from gpusolve.estimate.frozenbase import FrozenBase, frozen_linear_inputs
from gpusolve.estimate.memory import ACTIVATION_BYTES_BASE, NO_SAVINGS, Parallel, Savings
from gpusolve.estimate.pipeline import StageSplit, in_flight
from gpusolve.estimate.shapes import Arch, layers_per_stage
from gpusolve.estimate.stacks import MEGATRON, Stack, eager_saved_bytes_per_token
from gpusolve.estimate.stageparams import chunk_mix

# ---------------------------------------------------------------- activations


def activation_bytes_per_layer(
    *,
    seq: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    tp: int = 1,
    sequence_parallel: bool = True,
    checkpointing: str = "none",
    flash_attention: bool = False,
    act_bytes: float = ACTIVATION_BYTES_BASE,
    mlp_coeff: float = 19.0,
    kv_seq: int | None = None,
) -> float:
    """One transformer layer's stored activations for one micro-batch (Korthikanti 2022).

    `seq` is the sequence a GPU holds (the full one, or s/cp with context parallelism);
    `kv_seq` the keys each query attends to (default `seq`). `mlp_coeff` is the MLP's share
    in units of s·b·h (19 for Korthikanti's 4h GeLU MLP; `mlp_activation_coeff` for others).
    """
    s, b, h, a, t = seq, micro_batch, hidden, heads, max(1, tp)
    sbh = float(s) * b * h
    sp = sequence_parallel or t == 1
    keys = kv_seq or s
    if checkpointing == "full":
        per = 2.0 * sbh / (t if sp else 1)
    else:
        scores = 0.0 if (checkpointing == "selective" or flash_attention) else 5.0 * a * keys / h
        base = 15.0 + mlp_coeff  # attention 11 + norms 4, plus the MLP
        # Without SP the norms, dropout masks and the inputs of the first linears (10 s·b·h
        # of Korthikanti's 34) are replicated on every TP rank.
        replicated = sbh * (10.0 + (base - 10.0) / t + scores / t)
        per = sbh * (base + scores) / t if sp else replicated
    return per * act_bytes / ACTIVATION_BYTES_BASE


def mlp_activation_coeff(arch: Arch, *, moe_layer: bool) -> float:
    """The MLP's stored activations in units of s·b·h (2-byte elements): the input of the
    first linear (2), its outputs (2·f/h each, two for SwiGLU), the activation output (2·f/h)
    and the dropout mask (1); Korthikanti's 4h GeLU MLP gives 2 + 8 + 8 + 1 = 19. An MoE layer
    keeps one such set per routed and shared expert a token visits."""
    ratio_per_width = (6.0 if arch.gated_ffn else 4.0) / arch.hidden
    if not moe_layer:
        return 3.0 + ratio_per_width * arch.ffn
    visits = arch.active_experts + arch.shared_experts
    return 1.0 + visits * (2.0 + ratio_per_width * arch.expert_width)


def output_layer_bytes(
    *,
    seq: int,
    micro_batch: int,
    hidden: int,
    vocab: int,
    tp: int = 1,
    act_bytes: float = 2,
    loss_bytes_per_logit: float | None = None,
) -> float:
    """Final norm, LM head input and fp32 logits for the loss: 4·s·b·(h + v)/t
    (Korthikanti 2022, §4.2, the last pipeline stage). A stack that keeps more (or fewer)
    copies of the logits gives its bytes per logit (stacks.Stack.loss_bytes_per_logit)."""
    scale = act_bytes / 2
    per_logit = 4.0 * scale if loss_bytes_per_logit is None else loss_bytes_per_logit
    tokens = float(seq) * micro_batch / max(1, tp)
    return tokens * (4.0 * hidden * scale + per_logit * vocab)


@dataclass(frozen=True)
class Stored:
    """Bytes per token of one layer's stored activations. `replicated`: norm inputs and
    outputs and dropout masks, whole on every TP rank unless sequence parallelism splits them
    (Korthikanti's 10·s·b·h); `split`: divided by TP in any case."""

    replicated: float
    split: float


def stored_tensors(
    arch: Arch,
    *,
    moe_layer: bool,
    dropout: bool,
    savings: Savings,
    act_bytes: float,
    frozen: FrozenBase | None = None,
    flash_attention: bool = True,
) -> Stored:
    """What one layer keeps for its backward pass, tensor by tensor (Korthikanti 2022 §4's
    inventory with the model's real widths; a GPT layer with dropout gives 10 + 24 = 34 bytes
    per s·b·h). Attention scores are not here (`layer_activation_bytes` adds them when they
    are materialised). With a frozen base (`frozen`, LoRA/QLoRA) a dense layer's Linear
    inputs are what frozenbase.py keeps instead."""
    if frozen is not None and not (moe_layer or arch.is_mla):
        return _frozen_dense(arch, frozen, dropout, act_bytes, flash_attention)
    h, e = float(arch.hidden), act_bytes
    lin = 1.0 if savings.fp8_activations and act_bytes == 2 else e  # Linear inputs in FP8
    norms = 0.0 if savings.recompute_norms else lin
    rep = 2 * (e * h + norms * h)  # each sub-block's norm input and output (Linear input)
    rep += 2 * h if dropout else 0.0  # 1-byte masks after attention and after the MLP
    split = lin * arch.heads * arch.value_head_dim  # attention output: O-projection input
    if arch.is_mla:
        # Latents: RMSNorm inputs, and normalised, the up-projections' inputs.
        latents = float(arch.q_lora_rank + arch.kv_lora_rank)
        rep += e * latents + norms * latents + e * arch.rope_head_dim
        if not savings.recompute_up_projections:
            qk = arch.qk_head_dim
            split += e * arch.heads * (2 * qk + arch.value_head_dim)
    else:
        split += e * arch.head_dim * (arch.heads + 2 * arch.kv_heads)
    if moe_layer:
        rep += 4.0 * arch.experts  # fp32 router probabilities
        visits = arch.active_experts + arch.shared_experts
        # The routing weights multiply inside the fused activation (Megatron-LM's
        # moe/experts.py applies `weighted_bias_swiglu_impl(intermediate, bias, probs)`), so
        # their gradient needs the activation's inputs, already kept: no expert outputs.
        split += visits * (lin * h + _mlp_inner(arch, arch.expert_width, e, lin, savings))
    else:
        split += _mlp_inner(arch, arch.ffn, e, lin, savings)
    return Stored(rep, split)


def _frozen_dense(
    arch: Arch, frozen: FrozenBase, dropout: bool, e: float, flash_attention: bool
) -> Stored:
    """A dense layer over a frozen base: the norms' inputs, dropout masks, q, k, v and the
    activation function's inputs as in full training, the Linear inputs as kept."""
    h = float(arch.hidden)
    inputs = frozen_linear_inputs(arch, frozen, e=e, flash_attention=flash_attention)
    rep = 2 * e * h + (2 * h if dropout else 0.0) + inputs.replicated
    split = e * arch.head_dim * (arch.heads + 2 * arch.kv_heads) + inputs.split
    split += e * (2.0 if arch.gated_ffn else 1.0) * arch.ffn
    return Stored(rep, split)


def _mlp_inner(arch: Arch, width: int, e: float, lin: float, savings: Savings) -> float:
    """The MLP's tensors past its input: the activation function's inputs (gate and up for
    SwiGLU) and its output (the down-projection's input), per token."""
    inputs = (2.0 if arch.gated_ffn else 1.0) * width
    if savings.recompute_activation_function:
        return lin * inputs  # DeepSeek-V3 caches the SwiGLU inputs (in FP8 when it can)
    return e * inputs + lin * width


@lru_cache(maxsize=8192)
def layer_activation_bytes(
    arch: Arch,
    *,
    moe_layer: bool,
    seq: int,
    micro_batch: int,
    tp: int,
    sequence_parallel: bool,
    checkpointing: str,
    flash_attention: bool,
    act_bytes: float,
    dropout: bool,
    savings: Savings,
    kv_seq: int | None = None,
    extra_per_token: float = 0.0,
    frozen: FrozenBase | None = None,
) -> float:
    """One layer's stored activations for one micro-batch on one GPU; `extra_per_token` is
    what an eager stack keeps beyond the fused inventory (stacks.eager_saved_bytes_per_token),
    `frozen` the frozen base of a LoRA/QLoRA run (None: every weight trained)."""
    t = max(1, tp)
    sb = float(seq) * micro_batch
    sp = sequence_parallel or t == 1
    if checkpointing == "full":
        return 2.0 * sb * arch.hidden / (t if sp else 1) * act_bytes / ACTIVATION_BYTES_BASE
    st = stored_tensors(
        arch,
        moe_layer=moe_layer,
        dropout=dropout,
        savings=savings,
        act_bytes=act_bytes,
        frozen=frozen,
        flash_attention=flash_attention,
    )
    per = sb * (st.replicated / (t if sp else 1) + st.split / t + extra_per_token)
    if not (checkpointing == "selective" or flash_attention):
        keys = kv_seq or seq
        per += 5.0 * arch.heads * keys * sb / t * act_bytes / ACTIVATION_BYTES_BASE
    return per


@lru_cache(maxsize=8192)
def stage_activations_bytes(
    arch: Arch,
    *,
    split: StageSplit,
    schedule: str,
    seq: int,
    micro_batch: int,
    grad_accum: int,
    par: Parallel,
    checkpointing: str,
    flash_attention: bool,
    act_bytes: float = ACTIVATION_BYTES_BASE,
    dropout: bool = True,
    savings: Savings = NO_SAVINGS,
    mtp_depth: int = 0,
    stack: Stack = MEGATRON,
    working_set: bool = True,
    frozen: FrozenBase | None = None,
) -> tuple[float, ...]:
    """Activations on each pipeline rank at its peak: each chunk's layers times the micro-
    batches its schedule keeps in flight there (pipeline.in_flight), plus, where the output
    layer sits, one micro-batch of the final norm, LM-head input and fp32 logits
    (Korthikanti §4.2). Context parallelism splits the sequence over cp ranks.

    Each multi-token prediction module is one more block of the deepest kind in the last
    virtual stage (its micro-batches in flight), with the inputs of its two RMSNorms and of
    its projection kept, and one more micro-batch of logits for its loss.

    Recomputation's working set comes on top, on every rank (`recompute_working_bytes`),
    unless `working_set` is off (what the forward pass alone saves). The stack (`stacks.py`)
    sets what eager code keeps beyond the fused inventory and the bytes per logit; `frozen`
    the frozen base of a LoRA/QLoRA run (frozenbase.py)."""
    local_seq = max(1, seq // max(1, par.cp))
    extra = eager_saved_bytes_per_token(arch, stack, tp=par.tp, act_bytes=act_bytes)

    def per_layer(moe_layer: bool, mode: str = checkpointing) -> float:
        return layer_activation_bytes(
            arch,
            moe_layer=moe_layer,
            seq=local_seq,
            micro_batch=micro_batch,
            tp=par.tp,
            sequence_parallel=par.sequence_parallel,
            checkpointing=mode,
            flash_attention=flash_attention,
            act_bytes=act_bytes,
            dropout=dropout,
            savings=savings,
            kv_seq=seq,
            extra_per_token=extra,
            frozen=frozen,
        )

    dense_b = per_layer(False)
    moe_b = per_layer(True) if arch.is_moe else dense_b
    working = 0.0
    if working_set:
        working = recompute_working_bytes(per_layer, bool(arch.moe_layers), checkpointing)
    logits = output_layer_bytes(
        seq=local_seq,
        micro_batch=micro_batch,
        hidden=arch.hidden,
        vocab=arch.vocab,
        tp=par.tp,
        act_bytes=act_bytes,
        loss_bytes_per_logit=None if stack.name == "megatron" else stack.loss_bytes_per_logit,
    )
    sp = par.sequence_parallel or par.tp == 1
    kept_inputs = _mtp_inputs_bytes(arch, act_bytes, savings) * local_seq * micro_batch
    block = moe_b if arch.moe_layers else dense_b
    mtp_b = mtp_depth * (block + kept_inputs / (par.tp if sp else 1)) if mtp_depth else 0.0
    heads = (1 + mtp_depth) * logits
    layer_bytes = (dense_b, moe_b, mtp_b)
    return tuple(
        _rank_peak(arch, split, schedule, par, grad_accum, rank, layer_bytes)
        + working
        + (heads if split.holds_head(rank) else 0.0)
        for rank in range(len(split.ranks))
    )


def _rank_peak(
    arch: Arch,
    split: StageSplit,
    schedule: str,
    par: Parallel,
    grad_accum: int,
    rank: int,
    layer_bytes: tuple[float, float, float],
) -> float:
    """A rank's layers' activations at the worst moment of its schedule: each chunk's dense
    and MoE layers (and, in the last virtual stage, the MTP blocks) times the micro-batches
    in flight there."""
    dense_b, moe_b, mtp_b = layer_bytes
    last = len(split.virtual) - 1
    chunk_bytes = []
    for v in split.ranks[rank]:
        d, m = chunk_mix(arch, split, v)
        chunk_bytes.append(d * dense_b + m * moe_b + (mtp_b if v == last else 0.0))
    states = in_flight(schedule, par.pp, par.vp, grad_accum, rank)
    return max(sum(c * b for c, b in zip(st, chunk_bytes, strict=True)) for st in states)


def recompute_working_bytes(
    per_layer: Callable[[bool, str], float], moe_layer: bool, checkpointing: str
) -> float:
    """What recomputation holds beyond the kept tensors, one layer at a time in the backward
    pass. Full: the layer's forward is rerun from its kept input and all its activations are
    alive while it backpropagates (torch.utils.checkpoint and Megatron's
    `--recompute-granularity full` alike), the input itself already counted. Selective: the
    attention core is rerun (Korthikanti §5), its score matrices materialised again unless a
    fused kernel never stores them (the difference of the two modes' per-layer bytes)."""
    if checkpointing == "full":
        return max(0.0, per_layer(moe_layer, "none") - per_layer(moe_layer, "full"))
    if checkpointing == "selective":
        return max(0.0, per_layer(moe_layer, "none") - per_layer(moe_layer, "selective"))
    return 0.0


def _mtp_inputs_bytes(arch: Arch, act_bytes: float, savings: Savings) -> float:
    """Per token, what one MTP module keeps besides its block: the inputs of the RMSNorms of
    the hidden state and of the next token's embedding, and their normalised concatenation,
    the projection's input (2h; not kept when norms are recomputed)."""
    lin = 1.0 if savings.fp8_activations and act_bytes == 2 else act_bytes
    norms = 0.0 if savings.recompute_norms else lin
    return 2.0 * arch.hidden * (act_bytes + norms)


def inference_activations_bytes(arch: Arch, *, context: int, tp: int, chunk: int = 2048) -> float:
    """Transient activations while prefilling a chunk of up to `chunk` tokens: one layer's
    worth (34·s·h with flash attention) reused layer after layer, split by TP."""
    s = min(context, chunk)
    return 34.0 * s * arch.hidden / max(1, tp)


# ---------------------------------------------------------------- KV cache


def kv_bytes_per_element(precision: str, cache_precision: str | None = None) -> float:
    """KV cache element size: the stated cache format, else fp8 serving stores an fp8 cache;
    weight-only quantisation (int8/int4/nf4) keeps a 16-bit cache; fp32 stays fp32."""
    if cache_precision is not None:
        return {"fp32": 4.0, "fp8": 1.0, "int8": 1.0}.get(cache_precision, 2.0)
    return {"fp32": 4.0, "fp8": 1.0}.get(precision, 2.0)


def kv_cache_bytes_per_token(arch: Arch, kv_bytes: float) -> float:
    """K and V of one token over all layers: 2 · layers · kv_heads · head_dim · bytes with
    grouped-query attention (vLLM paper: OPT-13B 2 · 40 · 5120 · 2 = 819,200 bytes), or MLA's
    layers · (kv_lora_rank + rope_head_dim) · bytes (DeepSeek-V3: 61 · 576 · 2 = 70,272)."""
    return float(arch.layers * arch.kv_elements_per_token_layer) * kv_bytes


def kv_cache_bytes(
    arch: Arch, *, context: float, batch: float, kv_bytes: float, tp: int = 1, pp: int = 1
) -> float:
    """KV cache on one GPU: KV heads split over TP (replicated when TP exceeds them, as vLLM
    does; MLA's latent is replicated on every TP rank), layers over PP."""
    layers = layers_per_stage(arch, pp)
    if arch.is_mla:
        per_layer = float(arch.kv_elements_per_token_layer)
    else:
        heads_per_gpu = math.ceil(arch.kv_heads / max(1, tp))
        per_layer = 2.0 * heads_per_gpu * arch.head_dim
    return layers * per_layer * kv_bytes * context * batch
