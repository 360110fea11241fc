"""FLOPs, time and the roofline. FLOP and seconds throughout.

Training compute is 6·N·D (Kaplan et al. 2020; forward 2·N, backward 4·N per token) with
N the parameters a token touches (MoE: the active ones). LoRA/QLoRA freeze the base: the
weight-gradient GEMMs are skipped, leaving forward 2·N + input-gradient 2·N = 4·N·D.
Recomputation adds a forward: full recomputation 2·N·D more (8·N·D for full training);
selective recomputation re-runs only the attention core, 4·s·h per token per layer, and
nothing extra with flash attention (whose backward already recomputes it).

Time = model FLOPs / (GPUs × peak at the precision × MFU), MFU in the PaLM sense (model
FLOPs, 6·N·D, over peak), so the recompute cost enters as a time factor: full
recomputation costs `Params.recompute_time_overhead` (H10: 20–30%), selective its extra
FLOPs.

Bottleneck (H01, H03, H07): arithmetic intensity (FLOP per byte moved) against the card's
ridge point, peak FLOP/s ÷ memory bandwidth. Below the ridge the GPU waits on memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.units import TERA
from gpusolve.models.catalog import Card

TRAINING_KINDS = ("pretrain", "full_finetune", "lora", "qlora")

# A small-message all-reduce inside one node costs about 10 µs whatever its size (the
# order nccl-tests reports on NVLink and PCIe boxes; an estimate). Decode all-reduces are a
# few hundred kB, so this latency, not bandwidth, is what tensor parallelism costs there.
ALLREDUCE_LATENCY_S = 10e-6


def training_flops_per_token(arch: Arch, kind: str) -> float:
    """Model FLOPs per training token: 6·N (full), 4·N (LoRA/QLoRA, frozen base)."""
    factor = 4.0 if kind in ("lora", "qlora") else 6.0
    return factor * arch.active_params


def recompute_flops_per_token(
    arch: Arch, *, checkpointing: str, seq: int, flash_attention: bool
) -> float:
    """Extra FLOPs per token spent recomputing activations."""
    if checkpointing == "full":
        return 2.0 * arch.active_params
    if checkpointing == "selective" and not flash_attention:
        return 4.0 * seq * arch.hidden * arch.layers
    return 0.0


def compute_precision(kind: str, precision: str, optimizer: str) -> str:
    """The tensor-core format the GEMMs run in.

    fp32 training and serving use TF32 tensor cores (PyTorch `allow_tf32`, the usual
    setting; cards without TF32 fall back to FP32). Training cannot run in int8/int4/nf4:
    those (and QLoRA's 4-bit base, dequantised per GEMM) compute in bf16. Weight-only 4-bit
    serving computes in fp16; int8 serving uses int8 GEMMs (W8A8).
    """
    if precision == "fp32" or (kind != "inference" and optimizer == "adamw_fp32"):
        return "tf32"
    if kind == "inference":
        return {"int4": "fp16", "nf4": "fp16"}.get(precision, precision)
    if kind == "qlora" or precision in ("int8", "int4", "nf4"):
        return "bf16"
    return precision


def peak_flops_per_s(card: Card, precision: str) -> float | None:
    tflops = card.tflops_at(precision)
    return None if tflops is None else tflops * TERA


def memory_bandwidth_bytes_per_s(card: Card) -> float:
    return card.memory_bandwidth_gbs * 1e9


def ridge_point(card: Card, precision: str) -> float | None:
    """FLOP per byte at which the card turns from bandwidth-bound to compute-bound."""
    peak = peak_flops_per_s(card, precision)
    return None if peak is None else peak / memory_bandwidth_bytes_per_s(card)


def training_time_s(flops: float, gpus: int, peak_flops: float, mfu: float) -> float:
    """Seconds for `flops` at `mfu` of `gpus` × `peak_flops`."""
    return flops / (gpus * peak_flops * mfu)


def gemm_intensity(tokens: float, d_in: float, d_out: float, element_bytes: float) -> float:
    """FLOP per byte of one GEMM [tokens × d_in] · [d_in × d_out]: 2·T·d_in·d_out over the
    bytes of both inputs and the output."""
    flops = 2.0 * tokens * d_in * d_out
    moved = element_bytes * (tokens * d_in + d_in * d_out + tokens * d_out)
    return flops / moved


def training_intensity(arch: Arch, *, seq: int, micro_batch: int, tp: int, elem: float) -> float:
    """Intensity of the MLP up-projection, the largest GEMM of a layer, per GPU. MoE
    experts see only their share of the tokens (k/E of them)."""
    tokens = float(seq * micro_batch)
    if arch.is_moe:
        tokens *= arch.active_experts / arch.experts
    return gemm_intensity(max(1.0, tokens), arch.hidden, arch.ffn / max(1, tp), elem)


@dataclass(frozen=True)
class DecodeStep:
    """One decode step of a replica generating `batch` tokens (one per sequence)."""

    batch: int
    bytes_moved: float  # per GPU
    flops: float  # per GPU
    memory_time_s: float
    compute_time_s: float
    comm_time_s: float
    time_s: float
    tokens_per_s: float
    intensity: float  # FLOP per byte
    bound: str  # "memory_bandwidth" | "compute"


def decode_step(
    arch: Arch,
    *,
    batch: int,
    context: int,
    weights_bytes_per_gpu: float,
    kv_bytes_per_token_per_gpu: float,
    tp: int,
    pp: int,
    peak_flops: float,
    bandwidth_bytes_per_s: float,
    efficiency: float,
    link_bytes_per_s: float,
    act_bytes: float = 2.0,
) -> DecodeStep:
    """Roofline of a decode step (per GPU; pipeline stages overlap across micro-batches).

    Bytes: the weights (MoE: only experts some token in the batch routes to, expected
    1 − (1 − k/E)^B of them) and every sequence's KV cache at full `context` (the
    worst case, so the figure is conservative). FLOPs: 2·N_active per token. Time is the
    larger of bytes / bandwidth and FLOPs / peak, over the achieved fraction
    `efficiency`, plus two TP all-reduces per layer of the batch's hidden states
    (bandwidth and latency).
    """
    # With PP the batch is split into pp micro-batches that keep every stage busy: each
    # stage step reads its weights for batch/pp tokens.
    micro = max(1, math.ceil(batch / max(1, pp)))
    weights = weights_bytes_per_gpu
    if arch.is_moe:
        touched = 1.0 - (1.0 - arch.active_experts / arch.experts) ** micro
        expert_share = arch.expert_params / arch.params
        weights = weights * (1.0 - expert_share) + weights * expert_share * touched
    moved = weights + micro * context * kv_bytes_per_token_per_gpu
    flops = 2.0 * arch.active_params * micro / (tp * pp)
    t_mem = moved / (bandwidth_bytes_per_s * efficiency)
    t_compute = flops / (peak_flops * efficiency)
    t_comm = 0.0
    if tp > 1:
        per_allreduce = 2.0 * (tp - 1) / tp * micro * arch.hidden * act_bytes
        per_layer = per_allreduce / link_bytes_per_s + ALLREDUCE_LATENCY_S
        t_comm = 2.0 * math.ceil(arch.layers / pp) * per_layer
    step = max(t_mem, t_compute) + t_comm
    return DecodeStep(
        batch=batch,
        bytes_moved=moved,
        flops=flops,
        memory_time_s=t_mem,
        compute_time_s=t_compute,
        comm_time_s=t_comm,
        time_s=step,
        tokens_per_s=micro / step,
        intensity=flops / moved if moved > 0 else math.inf,
        bound="compute" if t_compute > t_mem else "memory_bandwidth",
    )
