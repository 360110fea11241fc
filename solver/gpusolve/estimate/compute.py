"""Precision, peak FLOP/s and the roofline's intensity. FLOP and seconds throughout.

Training compute is 6·N·D (Kaplan et al. 2020; forward 2·N, backward 4·N per token) with
N the parameters a token touches (MoE: the active ones); LoRA/QLoRA freeze the base (4·N·D).
The step time itself is costed kernel by kernel in steptime.py; this module names the
tensor-core format the GEMMs run in and the bottleneck class (H01, H03, H07): arithmetic
intensity (FLOP per byte moved) against the card's ridge point, peak FLOP/s ÷ memory
bandwidth. Below the ridge the GPU waits on memory.
"""

from __future__ import annotations

from gpusolve.estimate.shapes import Arch

EIGHT_BIT = ("fp8", "int8")  # GEMM formats with one-byte operands


def attention_precision(fmt: str) -> str:
    """FP8 recipes (Transformer Engine, DeepSeek-V3) keep attention in 16 bits."""
    return "bf16" if fmt in EIGHT_BIT else fmt


def compute_precision(kind: str, precision: str, optimizer: str | None = None) -> str:
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


def weight_flops_per_token(arch: Arch, kind: str) -> float:
    """6·N per token (forward 2·N, backward 4·N), 4·N for a frozen LoRA/QLoRA base (no weight
    gradients), over the parameters a token touches, the input embedding excluded (a lookup)."""
    factor = 4.0 if kind in ("lora", "qlora") else 6.0
    return factor * (arch.active_params - arch.input_embedding_params)


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
