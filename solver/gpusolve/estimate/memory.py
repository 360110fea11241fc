"""Memory per GPU: model states, activations, KV cache. Bytes throughout.

Model states (Rajbhandari et al. 2020, "ZeRO", §3): with mixed-precision Adam a parameter
costs 2 bytes of fp16/bf16 weights, 2 of gradients and K = 12 of optimizer state (fp32
master copy 4 + momentum 4 + variance 4): 16 B/param, the ZeRO/EleutherAI convention.
Megatron-LM and the Hugging Face memory guide keep gradients in fp32 (18 B/param); which
one applies is the named parameter `Params.bytes_per_param_convention` (16 or 18), read by
`full_training_state_bytes`.

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
tensors. Each pipeline rank is then sized on its own (`stage_memory`): the parameters the
framework places on it (embedding on the first stage, the output layer on the last, uneven
splits as given) and the micro-batches its schedule keeps in flight.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from functools import lru_cache

from gpusolve.estimate.pipeline import StageSplit, in_flight
from gpusolve.estimate.shapes import Arch, attention_params, layers_per_stage
from gpusolve.estimate.stacks import MEGATRON, Stack, eager_saved_bytes_per_token
from gpusolve.estimate.units import GB

WEIGHT_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nf4": 0.5,
}

# 4-bit formats store scaling constants next to the weights.
# NF4 (QLoRA, Dettmers et al. 2023, §3 "Double Quantization"): an 8-bit absmax per block of
# 64 plus one fp32 constant per 256 blocks = 8/64 + 32/(64·256) = 0.127 bit per parameter.
# INT4 (GPTQ/AWQ as transformers, AutoAWQ and GPTQModel pack them): an fp16 scale and a 4-bit
# zero point per group of g weights = 20/g bits (g = 128 by default: 0.156 bit).
DEFAULT_INT4_GROUP = 128
QUANT_CONSTANT_BITS: dict[str, float] = {
    "nf4": 8 / 64 + 32 / (64 * 256),
    "int4": 20 / DEFAULT_INT4_GROUP,
}


def quant_constant_bits(fmt: str, group_size: int | None = None) -> float:
    """Bits of scales and zero points per weight; `group_size` sets INT4's groups."""
    if fmt == "int4" and group_size:
        return 20 / group_size
    return QUANT_CONSTANT_BITS.get(fmt, 0.0)


# Optimizer moments per trained parameter (Hugging Face, "Model training anatomy": AdamW 8,
# 8-bit AdamW 2, SGD with momentum 4). Adafactor factorises the second moment (≈ 0 B/param)
# and keeps a first moment when beta1 is set; 4 B/param is the conservative figure.
MOMENT_BYTES: dict[str, float] = {
    "adamw": 8.0,
    "adamw_fp32": 8.0,
    "adam_8bit": 2.0,
    "sgd_momentum": 4.0,
    "adafactor": 4.0,
}
MASTER_COPY_BYTES = 4.0  # fp32 master weights kept by the optimizer in mixed precision

ACTIVATION_BYTES_BASE = 2  # Korthikanti's constants assume 2-byte activations

SHARDING_STAGE: dict[str, int] = {
    "ddp": 0,
    "zero1": 1,
    "zero2": 2,
    "zero3": 3,
    "fsdp_full": 3,
    "fsdp_hybrid": 3,
}


@dataclass(frozen=True)
class StateBytes:
    """Bytes per parameter of each model state."""

    weights: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer


@dataclass(frozen=True)
class ModelStates:
    """Model-state bytes on one GPU."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    gathered_weights_bytes: float = 0.0

    @property
    def total_bytes(self) -> float:
        return (
            self.weights_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.gathered_weights_bytes
        )

    def __add__(self, other: ModelStates) -> ModelStates:
        return ModelStates(
            self.weights_bytes + other.weights_bytes,
            self.gradients_bytes + other.gradients_bytes,
            self.optimizer_bytes + other.optimizer_bytes,
            self.gathered_weights_bytes + other.gathered_weights_bytes,
        )


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes on one GPU by purpose; `total_bytes` is their sum, by construction."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    kv_cache_bytes: float
    overhead_bytes: float
    gathered_weights_bytes: float = 0.0  # ZeRO-3/FSDP: layers gathered for compute

    @property
    def total_bytes(self) -> float:
        return (
            self.weights_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.kv_cache_bytes
            + self.overhead_bytes
            + self.gathered_weights_bytes
        )

    def as_gb(self) -> dict[str, float]:
        return {
            "weights": self.weights_bytes / GB,
            "gathered_weights": self.gathered_weights_bytes / GB,
            "gradients": self.gradients_bytes / GB,
            "optimizer": self.optimizer_bytes / GB,
            "activations": self.activations_bytes / GB,
            "kv_cache": self.kv_cache_bytes / GB,
            "overhead": self.overhead_bytes / GB,
            "total": self.total_bytes / GB,
        }


# ---------------------------------------------------------------- bytes per parameter


def is_fp32_training(precision: str, optimizer: str) -> bool:
    return precision == "fp32" or optimizer == "adamw_fp32"


def full_training_state_bytes(precision: str, optimizer: str, convention: int = 16) -> StateBytes:
    """Bytes per trained parameter for full training.

    fp32 training (precision fp32, or the `adamw_fp32` optimizer): weights 4, gradients 4,
    optimizer = moments only (the weights are the master copy): AdamW 4 + 4 + 8 = 16.
    Mixed precision (bf16, fp16; fp8 keeps bf16 weights and casts per GEMM, as Transformer
    Engine does; int8/int4/nf4 cannot be trained in full and are treated as bf16): weights 2,
    gradients 2 (convention 16) or 4 (convention 18, fp32 gradients), optimizer = fp32
    master 4 + moments: AdamW 2 + 2 + 12 = 16 or 2 + 4 + 12 = 18. Convention 20 is
    DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py): the module's bf16
    gradients and an fp32 accumulation buffer of the same parameters, 2 + 4 = 6 bytes of
    gradients beside the 2 of weights and 12 of optimizer state.
    """
    moments = MOMENT_BYTES[optimizer]
    if is_fp32_training(precision, optimizer):
        return StateBytes(4.0, 4.0, moments)
    gradients = GRADIENT_BYTES_BY_CONVENTION.get(convention, 2.0)
    return StateBytes(2.0, gradients, MASTER_COPY_BYTES + moments)


# Gradient bytes per trained parameter held on a GPU, and those the data-parallel reduction
# moves, by convention (full_training_state_bytes): DeepSpeed's BF16_Optimizer reduces its
# fp32 accumulation buffer, not the bf16 gradients beside it.
GRADIENT_BYTES_BY_CONVENTION: dict[int, float] = {16: 2.0, 18: 4.0, 20: 6.0}
REDUCED_GRADIENT_BYTES: dict[int, float] = {16: 2.0, 18: 4.0, 20: 4.0}


def adapter_state_bytes(optimizer: str, stack: Stack = MEGATRON) -> StateBytes:
    """LoRA adapters: weights, gradients and moments in the stack's dtype (fp32 by default:
    4, 4 and the optimizer's moments; no separate master copy)."""
    weights, grads, moment_elem = stack.adapter_bytes
    return StateBytes(weights, grads, MOMENT_BYTES[optimizer] * moment_elem / 4.0)


def stored_weight_bytes(precision: str, group_size: int | None = None) -> float:
    """Bytes per parameter of weights stored at `precision`, quantisation constants included."""
    return WEIGHT_BYTES[precision] + quant_constant_bits(precision, group_size) / 8


QUANTISED = ("int8", "int4", "nf4")
EMBEDDING_BYTES_WHEN_QUANTISED = 2.0  # bitsandbytes, GPTQ and AWQ quantise Linear layers only


def frozen_base_format(kind: str, precision: str) -> str:
    """LoRA: the frozen base at its precision. QLoRA: 4-bit NF4 (8-bit if precision int8)."""
    if kind == "qlora":
        return "int8" if precision == "int8" else "nf4"
    return precision


def frozen_base_bytes(kind: str, precision: str) -> float:
    return stored_weight_bytes(frozen_base_format(kind, precision))


def weights_bytes(
    arch: Arch,
    fmt: str,
    params: float | None = None,
    group_size: int | None = None,
    unquantised_bytes: float = EMBEDDING_BYTES_WHEN_QUANTISED,
) -> float:
    """Bytes of `params` parameters (default: all) stored in `fmt`. Quantised formats keep
    the embeddings and LM head unquantised (`unquantised_bytes` each: 16 bits, or fp32 where
    the stack upcasts them): only the Linear layers of the blocks shrink."""
    n = arch.params if params is None else params
    if fmt not in QUANTISED:
        return n * stored_weight_bytes(fmt)
    embed = min(arch.embedding_params, n)
    per = stored_weight_bytes(fmt, group_size)
    return (n - embed) * per + embed * unquantised_bytes


def lora_params(arch: Arch, rank: int, target_fraction: float | None = None) -> float:
    """Trainable adapter parameters: rank-r pairs on every linear layer of every block
    (attention q, k, v, o and the MLP, per expert), as QLoRA and PEFT's 'all-linear' do.
    A pair on a d_in × d_out matrix has r·(d_in + d_out) parameters."""
    if target_fraction is not None:
        return target_fraction * arch.params
    h, hd = arch.hidden, arch.head_dim
    attn = rank * (2 * (h + arch.heads * hd) + 2 * (h + arch.kv_heads * hd))
    mlp = rank * (3 if arch.gated_ffn else 2) * (h + arch.ffn) * arch.experts
    return float(arch.layers * (attn + mlp))


# ---------------------------------------------------------------- sharding


def shard_divisors(sharding: str, dp: int, shard_group: int | None = None) -> tuple[int, int, int]:
    """Divisors of (weights, gradients, optimizer) over data-parallel ranks.

    ZeRO-1 shards optimizer state, ZeRO-2 also gradients, ZeRO-3 / FSDP full also weights
    (H33). FSDP hybrid shards like ZeRO-3 inside `shard_group` (one node) and replicates
    across groups.
    """
    stage = SHARDING_STAGE[sharding]
    group = max(1, dp)
    if sharding == "fsdp_hybrid" and shard_group is not None:
        group = max(1, min(dp, shard_group))
    return (
        group if stage >= 3 else 1,
        group if stage >= 2 else 1,
        group if stage >= 1 else 1,
    )


def model_states_bytes(
    params: float,
    per_param: StateBytes,
    *,
    sharding: str = "ddp",
    dp: int = 1,
    shard_group: int | None = None,
) -> ModelStates:
    """Model states on one GPU for `params` parameters (already divided by TP × PP)."""
    w, g, o = shard_divisors(sharding, dp, shard_group)
    return ModelStates(
        params * per_param.weights / w,
        params * per_param.gradients / g,
        params * per_param.optimizer / o,
    )


@dataclass(frozen=True)
class Parallel:
    """The parallel degrees memory and communication depend on."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    sharding: str = "ddp"
    shard_group: int | None = None  # fsdp_hybrid: data-parallel ranks inside one node
    sequence_parallel: bool = True
    vp: int = 1  # virtual pipeline stages per rank (interleaved 1F1B)
    cp: int = 1  # context parallelism: the sequence split over cp ranks


def _gathered_layers_bytes(arch: Arch, par: Parallel, weight_bytes: float) -> float:
    """ZeRO-3/FSDP gather one layer's parameters for compute and prefetch the next: a working
    set of two layers (this TP shard; MoE experts split by EP) that the sharded weights do not
    include (DeepSpeed `stage3_prefetch_bucket_size`, FSDP's one-unit forward prefetch)."""
    if SHARDING_STAGE[par.sharding] < 3 or par.dp <= 1:
        return 0.0
    layers = min(2, layers_per_stage(arch, par.pp))
    body = arch.params - arch.embedding_params
    dense_per_layer = (body - arch.expert_params) / arch.layers
    expert_per_layer = arch.expert_params / arch.layers / max(1, par.ep)
    return layers * (dense_per_layer + expert_per_layer) / par.tp * weight_bytes


@dataclass(frozen=True)
class Savings:
    """The memory savings the frontier reports describe, as named options (all off = none).

    recompute_norms: norm outputs are recomputed from the kept norm inputs in the backward
      pass (DeepSeek-V3 §3.2.3 "Recomputation of RMSNorm and MLA Up-Projection");
    recompute_up_projections: MLA's per-head queries, keys and values are recomputed from the
      kept latents (same section); no effect on grouped-query attention;
    recompute_activation_function: the MLP keeps the SwiGLU/GeLU inputs and recomputes the
      output (DeepSeek-V3 §3.3.3 "inputs of the SwiGLU operator in MoE");
    fp8_activations: the inputs of the Linear layers are cached in FP8 for their backward
      (DeepSeek-V3 §3.3.3 "Low-Precision Storage"), 1 byte per element;
    bf16_moments: AdamW's two moments in BF16 (DeepSeek-V3 §3.3.3 "Low-Precision Optimizer
      States"): 4 B/param instead of 8, master weights and gradients unchanged;
    offload_optimizer: the optimizer states (fp32 master and moments) live in host memory and
      the update runs there (ZeRO-Offload, Ren et al. 2021).
    """

    recompute_norms: bool = False
    recompute_up_projections: bool = False
    recompute_activation_function: bool = False
    fp8_activations: bool = False
    bf16_moments: bool = False
    offload_optimizer: bool = False

    @classmethod
    def of(cls, names: Iterable[str]) -> Savings:
        return cls(**{name: True for name in names})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self) if getattr(self, f.name))


NO_SAVINGS = Savings()
MEMORY_SAVINGS: tuple[str, ...] = tuple(f.name for f in fields(Savings))


def with_savings(per: StateBytes, optimizer: str, savings: Savings) -> StateBytes:
    """Bytes per parameter once BF16 moments halve the moments and offloading moves the
    optimizer states off the GPU."""
    opt = per.optimizer
    if savings.bf16_moments:
        opt -= MOMENT_BYTES[optimizer] / 2
    if savings.offload_optimizer:
        opt = 0.0
    return StateBytes(per.weights, per.gradients, opt)


@dataclass(frozen=True)
class StageParams:
    """Parameters one pipeline rank holds, before TP/EP division and DP sharding."""

    dense: float  # attention, norms, dense MLPs, shared experts, routers, embeddings
    expert: float  # routed experts
    layers: int  # transformer layers


@lru_cache(maxsize=8192)
def training_states(
    arch: Arch,
    *,
    kind: str,
    precision: str,
    optimizer: str,
    convention: int,
    par: Parallel,
    lora_rank: int = 16,
    lora_fraction: float | None = None,
    stage: StageParams | None = None,
    savings: Savings = NO_SAVINGS,
    stack: Stack = MEGATRON,
) -> ModelStates:
    """Model states on one GPU for a training layout.

    Dense parameters are split by TP and sharded over DP; MoE expert parameters are split by
    TP × EP and sharded over the expert-data-parallel group DP / EP (DeepSpeed-MoE). `stage`
    is what this pipeline rank holds (default: an even 1/PP share of everything). LoRA/QLoRA:
    the frozen base has weights only; the adapters carry gradients and optimizer state.
    """
    if stage is None:
        stage = StageParams(
            arch.dense_params / par.pp, arch.expert_params / par.pp, layers_per_stage(arch, par.pp)
        )
    ep = max(1, par.ep)
    dense = stage.dense / par.tp
    expert = stage.expert / (par.tp * ep)
    edp = max(1, par.dp // ep)
    if kind in ("lora", "qlora"):
        fmt = frozen_base_format(kind, precision)
        upcast = 4.0 if kind == "qlora" and stack.upcast_unquantised else None
        # Average bytes per frozen dense parameter, the unquantised embeddings included.
        base_b = weights_bytes(
            arch, fmt, arch.dense_params, unquantised_bytes=upcast or EMBEDDING_BYTES_WHEN_QUANTISED
        ) / max(1.0, arch.dense_params)
        frozen = StateBytes(base_b, 0.0, 0.0)
        adapters = lora_params(arch, lora_rank, lora_fraction) * stage.layers / arch.layers
        states = (
            model_states_bytes(
                dense, frozen, sharding=par.sharding, dp=par.dp, shard_group=par.shard_group
            )
            + model_states_bytes(
                expert,
                StateBytes(stored_weight_bytes(fmt), 0.0, 0.0),
                sharding=par.sharding,
                dp=edp,
                shard_group=par.shard_group,
            )
            + model_states_bytes(
                adapters / par.tp,
                with_savings(adapter_state_bytes(optimizer, stack), optimizer, savings),
                sharding=par.sharding,
                dp=par.dp,
                shard_group=par.shard_group,
            )
        )
        weight_b = base_b
    else:
        per = with_savings(
            full_training_state_bytes(precision, optimizer, convention), optimizer, savings
        )
        states = model_states_bytes(
            dense, per, sharding=par.sharding, dp=par.dp, shard_group=par.shard_group
        ) + model_states_bytes(
            expert, per, sharding=par.sharding, dp=edp, shard_group=par.shard_group
        )
        weight_b = per.weights
    buffer = _gathered_layers_bytes(arch, par, weight_b)
    if buffer:
        unsharded = (dense + expert) * weight_b
        buffer = min(buffer, max(0.0, unsharded - states.weights_bytes))
    if kind == "qlora":
        buffer += dequantised_copy_bytes(arch, par)
    return ModelStates(states.weights_bytes, states.gradients_bytes, states.optimizer_bytes, buffer)


def dequantised_copy_bytes(arch: Arch, par: Parallel) -> float:
    """A quantised base is dequantised to 16 bits one Linear at a time for its GEMM, forward
    and backward (bitsandbytes `MatMul4Bit`: `dequantize_4bit(B).to(A.dtype)`; torchao's NF4
    `linear_nf4` and GPTQ's training path the same): the largest Linear's 16-bit copy is
    alive beside the quantised weights (this TP shard)."""
    h = float(arch.hidden)
    width = arch.ffn
    qkv = h * (arch.heads + 2 * arch.kv_heads) * arch.head_dim
    largest = max(qkv, h * width)  # the fused QKV, or one MLP projection
    return 2.0 * largest / max(1, par.tp)


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
    arch: Arch, *, moe_layer: bool, dropout: bool, savings: Savings, act_bytes: float
) -> Stored:
    """What one layer keeps for its backward pass, tensor by tensor (Korthikanti 2022 §4's
    inventory with the model's real widths; a GPT layer with dropout gives 10 + 24 = 34 bytes
    per s·b·h). Attention scores are not here (`layer_activation_bytes` adds them when they
    are materialised)."""
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
) -> float:
    """One layer's stored activations for one micro-batch on one GPU; `extra_per_token` is
    what an eager stack keeps beyond the fused inventory (stacks.eager_saved_bytes_per_token)."""
    t = max(1, tp)
    sb = float(seq) * micro_batch
    sp = sequence_parallel or t == 1
    if checkpointing == "full":
        return 2.0 * sb * arch.hidden / (t if sp else 1) * act_bytes / ACTIVATION_BYTES_BASE
    st = stored_tensors(
        arch, moe_layer=moe_layer, dropout=dropout, savings=savings, act_bytes=act_bytes
    )
    per = sb * (st.replicated / (t if sp else 1) + st.split / t + extra_per_token)
    if not (checkpointing == "selective" or flash_attention):
        keys = kv_seq or seq
        per += 5.0 * arch.heads * keys * sb / t * act_bytes / ACTIVATION_BYTES_BASE
    return per


def layer_params(arch: Arch) -> tuple[float, float, float]:
    """Parameters of (a dense layer, an MoE layer outside its routed experts, an MoE layer's
    routed experts), scaled so that all layers add up to the model's body."""
    attn = (
        attention_params(
            hidden=arch.hidden,
            heads=arch.heads,
            kv_heads=arch.kv_heads,
            head_dim=arch.head_dim,
            kv_lora_rank=arch.kv_lora_rank,
            q_lora_rank=arch.q_lora_rank,
            rope_head_dim=arch.rope_head_dim,
            v_head_dim=arch.v_head_dim,
        )
        + 2 * arch.hidden
    )
    matrices = 3 if arch.gated_ffn else 2
    dense_layer = attn + matrices * arch.hidden * arch.ffn
    moe_dense = attn + arch.shared_experts * matrices * arch.hidden * arch.expert_width
    moe_dense += arch.hidden * arch.experts  # router
    moe_layers = arch.moe_layers
    dense_layers = arch.layers - moe_layers
    counted = dense_layers * dense_layer + moe_layers * moe_dense
    body = arch.dense_params - arch.embedding_params
    scale = body / counted if counted > 0 else 0.0
    expert = arch.expert_params / moe_layers if moe_layers else 0.0
    return dense_layer * scale, moe_dense * scale, expert


# Per multi-token prediction module, the RMSNorms of the hidden state and of the next token's
# embedding (DeepSeek-V3 §2.2, eq. 21) and the final norm before the shared output head.
MTP_NORMS = 3


def mtp_params(arch: Arch) -> tuple[float, float]:
    """(parameters outside routed experts, routed-expert parameters) of one multi-token
    prediction module (DeepSeek-V3 §2.2): a transformer block shaped like the model's deepest
    layer (an MoE block in an MoE model), the projection M_k of 2h x h over the concatenated
    normalised hidden state and next-token embedding, and its norms. The embedding and the
    output head are the main model's: shared, no parameters of their own."""
    dense_layer, moe_dense, moe_expert = layer_params(arch)
    h = float(arch.hidden)
    extra = 2.0 * h * h + MTP_NORMS * h
    if arch.moe_layers:
        return moe_dense + extra, moe_expert
    return dense_layer + extra, 0.0


def mtp_active_params(arch: Arch) -> float:
    """Parameters of one MTP module a token passes through (MoE: its routed experts only)."""
    dense, expert = mtp_params(arch)
    return dense + expert * arch.active_experts / max(1, arch.experts)


def head_params(arch: Arch, pp: int) -> float:
    """The output layer (and final norm) on the last stage. With tied embeddings and a
    pipeline the last stage keeps its own copy of the embedding (Megatron-LM's shared word
    embeddings, gradients all-reduced between the first and last stage)."""
    untied_head = arch.embedding_params - arch.input_embedding_params
    if pp > 1 and untied_head < 0.5 * arch.vocab * arch.hidden:
        return untied_head + arch.input_embedding_params
    return untied_head


def _chunk_mix(arch: Arch, split: StageSplit, v: int) -> tuple[int, int]:
    """(dense-MLP layers, MoE layers) of virtual stage `v`: an MoE model's first
    `dense_layers` layers keep a dense MLP."""
    first_moe = arch.layers - arch.moe_layers
    start, n = split.first_layer(v), split.virtual[v]
    dense_here = max(0, min(start + n, first_moe) - start)
    return dense_here, n - dense_here


@lru_cache(maxsize=1024)
def stage_params(arch: Arch, split: StageSplit, mtp_depth: int = 0) -> tuple[StageParams, ...]:
    """What each rank holds: its layers, the input embedding on the first virtual stage, the
    output layer on the last, with the `mtp_depth` multi-token prediction modules beside it
    (DeepSeek-V3 §3.2.1 keeps the output head and the deepest layers on one rank)."""
    dense_layer, moe_dense, moe_expert = layer_params(arch)
    mtp_dense, mtp_expert = mtp_params(arch) if mtp_depth else (0.0, 0.0)
    out = []
    for rank, virtual in enumerate(split.ranks):
        dense = expert = 0.0
        for v in virtual:
            d, m = _chunk_mix(arch, split, v)
            dense += d * dense_layer + m * moe_dense
            expert += m * moe_expert
        if split.holds_embedding(rank):
            dense += arch.input_embedding_params
        if split.holds_head(rank):
            dense += head_params(arch, split.pp) + mtp_depth * mtp_dense
            expert += mtp_depth * mtp_expert
        out.append(StageParams(dense, expert, split.layers(rank)))
    return tuple(out)


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
) -> tuple[float, ...]:
    """Activations on each pipeline rank at its peak: each chunk's layers times the micro-
    batches its schedule keeps in flight there (pipeline.in_flight), plus, where the output
    layer sits, one micro-batch of the final norm, LM-head input and fp32 logits
    (Korthikanti §4.2). Context parallelism splits the sequence over cp ranks.

    Each multi-token prediction module is one more block of the deepest kind in the last
    virtual stage (its micro-batches in flight), with the inputs of its two RMSNorms and of
    its projection kept, and one more micro-batch of logits for its loss.

    Recomputation's working set comes on top, on every rank (`recompute_working_bytes`),
    unless `working_set` is off (what the forward pass alone saves).
    The stack (`stacks.py`) sets what eager code keeps beyond the fused inventory and the
    bytes kept per logit at the loss."""
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
    mtp_b = 0.0
    if mtp_depth:
        sp = par.sequence_parallel or par.tp == 1
        mtp_b = mtp_depth * (
            (moe_b if arch.moe_layers else dense_b)
            + _mtp_inputs_bytes(arch, act_bytes, savings)
            * local_seq
            * micro_batch
            / (par.tp if sp else 1)
        )
    last = len(split.virtual) - 1
    out = []
    for rank, virtual in enumerate(split.ranks):
        chunk_bytes = []
        for v in virtual:
            d, m = _chunk_mix(arch, split, v)
            chunk_bytes.append(d * dense_b + m * moe_b + (mtp_b if v == last else 0.0))
        states = in_flight(schedule, par.pp, par.vp, grad_accum, rank)
        peak = max(sum(c * b for c, b in zip(st, chunk_bytes, strict=True)) for st in states)
        heads = 1 + mtp_depth
        out.append(peak + working + (heads * logits if split.holds_head(rank) else 0.0))
    return tuple(out)


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
