"""One transformer layer's work per micro-batch, and the rates a GPU runs it at.

`layer_work` lists a layer's forward GEMMs, attention FLOPs and streaming bytes on one GPU of
a pipeline rank; `device` gives the card's achievable rates for the step's formats; and
`layer_times` times the layer's forward and backward at the roofline of those rates (the
model and its sources: `steptime`'s docstring).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.estimate.efficiency import Efficiency, gemm_shape_factor
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.stacks import eager_stream_bytes_per_token, stack_named
from gpusolve.estimate.stepshape import StepShape

# FlashAttention-2's backward runs five matmuls to the forward's two (Dao 2023, §3.1.2).
FLASH_BACKWARD_FLOPS = 2.5
# A kernel launched from eager PyTorch costs its GPU time plus a gap of about 5 µs on the GPU
# timeline (driver and runtime submission, 4-6 µs measured: susun-blog.com "pegainfer (3): From
# Launch Overhead to CUDA Graph", RTX 5070 Ti, CUDA 13). A fused transformer layer runs about
# 16 kernels forward (two norms, four GEMM groups, attention, activation, two residual/dropout
# adds, rotary, TP collectives) and twice as many backward.
KERNEL_GAP_S = 5e-6
KERNELS_FWD = 16


# --------------------------------------------------------------------------- per-layer work


@dataclass(frozen=True)
class Gemm:
    flops: float
    bytes: float


def gemm_of(m: float, k: float, n: float, elem: float, weights: float = 1.0) -> Gemm:
    """[m × k] · [k × n]; `weights` copies of the k × n matrix are read (grouped experts)."""
    return Gemm(2.0 * m * k * n, elem * (m * k + weights * k * n + m * n))


@dataclass(frozen=True)
class LayerWork:
    """Forward work of one layer for one micro-batch on one GPU."""

    gemms: tuple[Gemm, ...]
    expert_gemms: tuple[Gemm, ...]  # routed experts: the experts/ep held on this GPU
    attention_flops: float  # attention core (QK^T and AV) as executed
    stream_bytes: float  # norms, residuals, dropout, activations, permutes
    softmax_bytes: float  # score-matrix softmax and dropout (non-fused attention only)
    tp_message_bytes: float  # the layer's hidden states (one TP collective)
    kv_bytes: float  # the local K and V (one CP ring hop)
    a2a_tokens: float  # tokens this GPU routes per all-to-all (M/t), 0 for a dense layer
    kernels_fwd: int = KERNELS_FWD  # launches per layer forward (eager stacks launch more)


def layer_work(arch: Arch, sh: StepShape, *, moe: bool, elem: float) -> LayerWork:
    """Forward GEMMs and streaming bytes of one layer (dense MLP, or MoE when `moe`)."""
    t, m, e = sh.tp, float(sh.tokens_per_micro), sh.act_bytes
    h, a = arch.hidden, arch.heads
    gemms: list[Gemm] = []
    if arch.is_mla:
        dqk, dv = arch.qk_head_dim, arch.value_head_dim
        if arch.q_lora_rank:
            gemms.append(gemm_of(m, h, arch.q_lora_rank, elem))
            gemms.append(gemm_of(m, arch.q_lora_rank, a * dqk / t, elem))
        else:
            gemms.append(gemm_of(m, h, a * dqk / t, elem))
        gemms.append(gemm_of(m, h, arch.kv_lora_rank + arch.rope_head_dim, elem))
        gemms.append(gemm_of(m, arch.kv_lora_rank, a * (arch.head_dim + dv) / t, elem))
        gemms.append(gemm_of(m, a * dv / t, h, elem))
        kv_width = float(arch.kv_lora_rank + arch.rope_head_dim)
    else:
        hd = arch.head_dim
        gemms.append(gemm_of(m, h, (a + 2 * arch.kv_heads) * hd / t, elem))
        gemms.append(gemm_of(m, a * hd / t, h, elem))
        kv_width = 2 * arch.kv_heads * hd / t
    up = 2 if arch.gated_ffn else 1
    expert_gemms: list[Gemm] = []
    if moe:
        fe, k = arch.expert_width, arch.active_experts
        local = max(1, arch.experts // max(1, sh.ep))
        routed = m * k  # token-expert pairs this GPU computes (balanced routing)
        expert_gemms.append(gemm_of(routed, h, up * fe / t, elem, weights=local))
        expert_gemms.append(gemm_of(routed, fe / t, h, elem, weights=local))
        gemms.append(gemm_of(m, h, arch.experts, elem))  # router
        if arch.shared_experts:
            width = arch.shared_experts * fe
            gemms.append(gemm_of(m, h, up * width / t, elem))
            gemms.append(gemm_of(m, width / t, h, elem))
        act_width = (k + arch.shared_experts) * fe
        permute = 4.0 * k * h * e / t  # permute in, unpermute out (read + write)
        a2a = m / t
    else:
        gemms.append(gemm_of(m, h, up * arch.ffn / t, elem))
        gemms.append(gemm_of(m, arch.ffn / t, h, elem))
        act_width = arch.ffn
        permute = 0.0
        a2a = 0.0
    if sh.adapter_params_per_layer:
        r_flops = 2.0 * m * sh.adapter_params_per_layer / t
        gemms.append(Gemm(r_flops, elem * (sh.adapter_params_per_layer / t + 2 * m * h)))
    causal = 0.5 if sh.flash_attention else 1.0
    attention = 2.0 * m * sh.seq * a / t * (arch.qk_head_dim + arch.value_head_dim) * causal
    # Streaming tensors per token (Korthikanti §4.1 lists what each op keeps; each op here
    # reads its input and writes its output): two norms 2·(h + h), two residual adds
    # 2·(2h + h), dropout masks (1 byte) and their application, the MLP activation
    # (SwiGLU reads two halves), token permutes for MoE.
    sp = t if sh.sequence_parallel else 1
    per_token = e * (4 * h + 6 * h) / sp
    if sh.dropout:
        per_token += (2 * h * (1 + 2 * e)) / sp
    per_token += e * (3 if arch.gated_ffn else 2) * act_width / t + permute
    stack = stack_named(sh.stack)
    per_token += eager_stream_bytes_per_token(
        arch, stack, tp=t, adapted_share=sh.adapted_share, act_bytes=e
    )
    if sh.qlora:
        # Dequantise the 4-bit base weights to bf16 before each GEMM: read 0.5, write 2 B.
        per_token += 2.5 * arch.layer_params / t / m
    softmax = 0.0
    if not sh.flash_attention:
        # Scale-mask-softmax reads and writes the scores; dropout writes a mask and the
        # dropped probabilities (Korthikanti: 2as²b + as²b + 2as²b bytes of activations).
        softmax = m * sh.seq * a / t * (2 * e + (1 + 2 * e if sh.dropout else 0))
    return LayerWork(
        gemms=tuple(gemms),
        expert_gemms=tuple(expert_gemms),
        attention_flops=attention,
        stream_bytes=m * per_token,
        softmax_bytes=softmax,
        tp_message_bytes=m * h * e,
        kv_bytes=m * kv_width * e,
        a2a_tokens=a2a,
        kernels_fwd=stack.kernels_fwd,
    )


# --------------------------------------------------------------------------- timing


@dataclass(frozen=True)
class Device:
    """The achievable rates of one GPU."""

    gemm_flops: float
    attention_flops: float
    attention_fwd: float
    attention_bwd: float
    stream_bytes_per_s: float
    head_gemm_flops: float  # the output layer's GEMMs (16-bit under an 8-bit recipe)


def device(
    hw: Hardware, eff: Efficiency, sh: StepShape, gemm_mamf: float, head_mamf: float | None = None
) -> Device:
    """`gemm_mamf`: the card's MAMF over its peak in the GEMMs' format; `head_mamf` the same
    in the output layer's format (16-bit: `attention_peak`'s), when that differs.

    FP8 recipes leave the output layer in 16 bits: Megatron-core's GPTModel builds it as
    `tensor_parallel.ColumnParallelLinear` (core_r0.8.0, the release behind NeMo 24.07 and the
    Megatron-LM README's H100 tables), outside Transformer Engine's FP8 modules, and
    DeepSeek-V3 keeps "the embedding module, the output head" in BF16 (§3.3.1)."""
    bw = hw.card.memory_bandwidth_gbs * 1e9 * eff.memory
    shape = gemm_shape_factor(eff.family)
    gemm = sh.gemm_peak * gemm_mamf * shape
    head = gemm if head_mamf is None else sh.attention_peak * head_mamf * shape
    return Device(
        gemm_flops=gemm,
        attention_flops=sh.attention_peak,
        attention_fwd=eff.attention_fwd,
        attention_bwd=eff.attention_bwd,
        stream_bytes_per_s=bw,
        head_gemm_flops=head,
    )


def gemm_time(g: Gemm, dev: Device) -> float:
    return max(g.flops / dev.gemm_flops, g.bytes / dev.stream_bytes_per_s)


@dataclass(frozen=True)
class LayerTimes:
    fwd_s: float  # compute of the forward
    bwd_s: float  # compute of the backward
    attention_fwd_s: float  # the attention core alone (selective recomputation reruns it)
    attention_bwd_s: float
    wgrad_s: float  # weight-gradient GEMMs (what backward TP collectives hide behind)


def layer_times(w: LayerWork, dev: Device, *, flash: bool, frozen_base: bool) -> LayerTimes:
    gemm_fwd = sum(gemm_time(g, dev) for g in w.gemms) + sum(
        gemm_time(g, dev) for g in w.expert_gemms
    )
    if flash:
        attn_fwd = w.attention_flops / (dev.attention_flops * dev.attention_fwd)
        attn_bwd = (
            FLASH_BACKWARD_FLOPS * w.attention_flops / (dev.attention_flops * dev.attention_bwd)
        )
    else:
        attn_fwd = w.attention_flops / dev.gemm_flops
        attn_bwd = 2.0 * attn_fwd
        attn_fwd += w.softmax_bytes / dev.stream_bytes_per_s
        attn_bwd += 2.0 * w.softmax_bytes / dev.stream_bytes_per_s
    stream = w.stream_bytes / dev.stream_bytes_per_s
    wgrad = 0.0 if frozen_base else gemm_fwd
    return LayerTimes(
        fwd_s=gemm_fwd + attn_fwd + stream + w.kernels_fwd * KERNEL_GAP_S,
        bwd_s=gemm_fwd + wgrad + attn_bwd + 2.0 * stream + 2 * w.kernels_fwd * KERNEL_GAP_S,
        attention_fwd_s=attn_fwd,
        attention_bwd_s=attn_bwd,
        wgrad_s=wgrad,
    )
