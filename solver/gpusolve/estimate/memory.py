"""Memory per GPU: model states, the breakdown, sharding and the memory savings. Bytes.

Model states (Rajbhandari et al. 2020, "ZeRO", §3): with mixed-precision Adam a parameter
costs 2 bytes of fp16/bf16 weights, 2 of gradients and K = 12 of optimizer state (fp32
master copy 4 + momentum 4 + variance 4): 16 B/param, the ZeRO/EleutherAI convention.
Megatron-LM and the Hugging Face memory guide keep gradients in fp32 (18 B/param); which
one applies is the named parameter `Params.bytes_per_param_convention` (16, 18 or 20), read by
`full_training_state_bytes`.

Activations and the KV cache are in `activations.py`, the parameters each pipeline rank holds
in `stageparams.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from functools import lru_cache

from gpusolve.estimate.shapes import Arch, layers_per_stage
from gpusolve.estimate.stacks import MEGATRON, Stack
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


def _states_bytes(m: ModelStates | MemoryBreakdown) -> float:
    """Weights, gradients and optimizer states: where both totals start (added in the same
    order as each total adds them, so the floats are the same)."""
    return m.weights_bytes + m.gradients_bytes + m.optimizer_bytes


@dataclass(frozen=True)
class ModelStates:
    """Model-state bytes on one GPU."""

    weights_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    gathered_weights_bytes: float = 0.0

    @property
    def total_bytes(self) -> float:
        return _states_bytes(self) + self.gathered_weights_bytes

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
            _states_bytes(self)
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


def lora_params(
    arch: Arch,
    rank: int,
    target_fraction: float | None = None,
    targets: frozenset[str] | None = None,
) -> float:
    """Trainable adapter parameters: rank-r pairs on the `targets` Linear layers of every block
    (default: all of them, attention q, k, v, o and the MLP, per expert, as QLoRA and PEFT's
    'all-linear' do). A pair on a d_in × d_out matrix has r·(d_in + d_out) parameters."""
    if target_fraction is not None:
        return target_fraction * arch.params
    h, q, kv = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    mlp = (h + arch.ffn) * arch.experts
    widths = {"q": h + q, "k": h + kv, "v": h + kv, "o": q + h, "up": mlp, "down": mlp}
    if arch.gated_ffn:
        widths["gate"] = mlp
    chosen = widths.keys() if targets is None else targets & widths.keys()
    return float(arch.layers * rank * sum(widths[t] for t in chosen))


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
        buffer += dequantised_copy_bytes(arch, par) * stack.dequantised_copies
    return ModelStates(states.weights_bytes, states.gradients_bytes, states.optimizer_bytes, buffer)


def dequantised_copy_bytes(arch: Arch, par: Parallel) -> float:
    """A quantised base is dequantised to 16 bits one Linear at a time for its GEMM, forward
    and backward (bitsandbytes `MatMul4Bit`: `dequantize_4bit(B).to(A.dtype)`; torchao's NF4
    `linear_nf4` and GPTQ's training path the same): the largest Linear's 16-bit copy is
    alive beside the quantised weights (this TP shard); two where the cast after the
    dequantisation copies again (stacks.Stack.dequantised_copies)."""
    h = float(arch.hidden)
    width = arch.ffn
    qkv = h * (arch.heads + 2 * arch.kv_heads) * arch.head_dim
    largest = max(qkv, h * width)  # the fused QKV, or one MLP projection
    return 2.0 * largest / max(1, par.tp)
