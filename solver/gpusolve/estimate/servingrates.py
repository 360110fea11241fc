"""One serving replica's achievable rates (`Rates`): its GEMMs at the rates each card family
reaches at decode shapes, an MoE layer's experts apart at each expert's rows, the KV reads,
the memory-bound kernels, TP all-reduces or attention-DP dispatch, kernel gaps; and from
them the decode step, the prompt steps, TTFT and tokens/s (serving.py holds what the engine
keeps in memory and how a service's sequences are spread over replicas)."""

from __future__ import annotations

import math

from gpusolve.estimate import memo
from gpusolve.estimate.activations import kv_bytes_per_element, kv_cache_bytes
from gpusolve.estimate.collectives import allreduce_s
from gpusolve.estimate.compute import EIGHT_BIT, attention_precision, compute_precision
from gpusolve.estimate.decode_gemm import compute_fraction
from gpusolve.estimate.decode_rates import measured_for
from gpusolve.estimate.efficiency import FIT_GEMM_SHAPES, efficiency_of, mamf_fraction
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import Layout
from gpusolve.estimate.memory import weights_bytes
from gpusolve.estimate.moeserve import (
    DISPATCH_KERNELS,
    MOE_EXTRA_KERNELS,
    dispatch_s,
    expanded_row_bytes,
    expanded_rows_s,
    expert_layer_params,
    routed_active_params,
    rows_per_expert,
    split_of,
    touched_share,
)
from gpusolve.estimate.serving import (
    CHUNK_TOKENS,
    max_batch_by_engine,
    mean_live_context,
    request_shape,
    serving_layout,
    split_weights_bytes,
    workload_engine,
)
from gpusolve.estimate.shapes import Arch, layers_per_stage, resolve_arch
from gpusolve.models.catalog import Card
from gpusolve.models.requirements import InferenceWorkload

PAGED_ATTENTION_SLOWDOWN = 1.23  # vLLM §7.3: 20-26% higher attention kernel latency
# Estimate: a CUDA-graph replay leaves about 2 µs between dependent kernels (launch overhead
# is paid once per graph; NVIDIA, "Getting Started with CUDA Graphs", 2019). A decode layer
# runs about 10 kernels: two norms, QKV, rotary, attention, O, residual, gate-up, act, down.
GRAPH_KERNEL_GAP_S = 2e-6
DECODE_KERNELS_PER_LAYER = 10
# Weight-only quantised decode dequantises inside the GEMV and reaches less of the bandwidth:
# gpt-fast's own "Memory BW" column for Llama-2-7B on A100-80GB, batch 1: bf16 1,397.31 GB/s,
# int8 1,069.20, int4 (group 32) 862.69 (pytorch-labs/gpt-fast README, commit 0f925b5).
DEQUANT_BANDWIDTH_SHARE = {
    "int8": 1069.20 / 1397.31,
    "int4": 862.69 / 1397.31,
    "nf4": 862.69 / 1397.31,
}
WEIGHT_ONLY_4BIT = ("int4", "nf4")


def serving_format(card: Card, precision: str) -> tuple[str, bool]:
    """(the GEMMs' format, whether the weights are dequantised into it). 8-bit weights on a
    card without 8-bit tensor cores of that kind run weight-only: vLLM serves FP8 checkpoints
    on Ampere as W8A16 through FP8 Marlin ("FP8 models will run on compute capability > 8.0
    (Ampere) as weight-only W8A16, utilizing FP8 Marlin", docs/features/quantization/fp8.md),
    16-bit GEMMs on 8-bit weights; 4-bit weights always do (compute.compute_precision)."""
    fmt = compute_precision("inference", precision)
    if fmt in EIGHT_BIT and getattr(card.tflops, fmt, None) is None:
        return "bf16", True
    return fmt, precision in WEIGHT_ONLY_4BIT


class Rates:
    """The achievable rates of one replica's GPUs for this workload, and its step's kernels."""

    def __init__(
        self, workload: InferenceWorkload, arch: Arch, hw: Hardware, layout: Layout
    ) -> None:
        card = hw.card
        eff = efficiency_of(card)
        fmt, self.weight_only = serving_format(card, workload.precision)
        self.fmt = fmt
        self.peak = (card.tflops_at(fmt) or card.tflops.fp32) * 1e12
        self.train_fraction = mamf_fraction(card, eff, fmt) * FIT_GEMM_SHAPES
        # The measured sets stream weights of their GEMM's own width; weights dequantised into
        # 16-bit GEMMs stream a half or a quarter of the bytes at the same M, which no set
        # measured.
        self.weight_only_4bit = workload.precision in WEIGHT_ONLY_4BIT
        self.split = split_of(layout)
        self.routed_active = routed_active_params(arch)
        bf16_tflops = card.tflops_at("bf16") or 0.0
        self.table_key = (eff.family, fmt, bf16_tflops)
        dense_layer = (arch.active_params - self.routed_active - arch.embedding_params) / max(
            1, arch.layers
        )
        self.decode_rate = (
            None
            if self.weight_only
            else measured_for(
                eff.family, fmt, bf16_tflops, dense_layer / self.split.attention_ranks
            )
        )
        self.expert_layer_gpu = expert_layer_params(arch, layout.tp)
        self.expanded_bytes = expanded_row_bytes(workload_engine(workload).fused_moe_finalize, fmt)
        self.moe_layers_per_stage = arch.moe_layers / layout.pp
        attn_peak = (card.tflops_at(attention_precision(fmt)) or 1.0) * 1e12
        self.attention = attn_peak * eff.attention_fwd
        self.bandwidth = card.memory_bandwidth_gbs * 1e9 * eff.memory
        # 8-bit weights served weight-only dequantise as gpt-fast's int8 kernel does, the
        # nearest measured weight-only 8-bit decode.
        eight_bit_weight_only = self.weight_only and workload.precision in EIGHT_BIT
        stream = "int8" if eight_bit_weight_only else workload.precision
        self.weight_bandwidth = self.bandwidth * DEQUANT_BANDWIDTH_SHARE.get(stream, 1.0)
        self.tp, self.pp = layout.tp, layout.pp
        self.arch = arch
        self.mixed = workload_engine(workload).mixed_prefill
        self.engine_cap = max_batch_by_engine(workload, hw)
        tp_group = hw.group_bus_bytes_per_s(layout.tp, 1) if layout.tp > 1 else math.inf
        self.tp_bus = tp_group
        self.tp_latency = hw.latency_s(layout.tp, 1, small=True) if layout.tp > 1 else 0.0
        self.tp_latency_large = hw.latency_s(layout.tp, 1) if layout.tp > 1 else 0.0
        if layout.tp * layout.pp > hw.gpus_per_node:
            nic = hw.nic_bytes_per_s()
            self.pp_latency = hw.latency_s(1, 2, allreduce=False, small=True) + (
                arch.hidden * 2 / nic if nic > 0 else math.inf
            )
        else:
            self.pp_latency = hw.latency_s(2, 1, allreduce=False, small=True)
        self.weights_gpu = split_weights_bytes(workload, arch, layout)
        stored = weights_bytes(arch, workload.precision, group_size=workload.quant_group_size)
        self.expert_weights_gpu = (
            stored * arch.expert_params / arch.params / (layout.tp * layout.pp)
        )
        self.hw = hw
        kv_b = kv_bytes_per_element(workload.precision, workload.kv_cache_precision)
        # One sequence's KV per token on the ranks that attend it, spread over the stage's
        # ranks as its sequences are (attention DP: a rank holds whole KV of 1/t of them).
        self.kv_token_gpu = (
            kv_cache_bytes(
                arch, context=1, batch=1, kv_bytes=kv_b, tp=self.split.attention_ranks, pp=layout.pp
            )
            * self.split.sequence_share
        )
        self.prompt, self.output, _ = request_shape(workload)
        self.context = mean_live_context(workload)
        self.stage_layers = layers_per_stage(arch, layout.pp)

    def gemm_fraction(self, rows: float) -> float:
        """Achieved share of the dense peak on GEMMs of `rows` rows (measured decode shapes
        where the family has them, else the large-GEMM training figure)."""
        if self.decode_rate is None:
            return self.train_fraction
        return compute_fraction(self.decode_rate.table, rows)

    def expert_fraction(self, rows: float) -> float:
        """Achieved share of the dense peak on the grouped expert GEMMs of a step of `rows`
        tokens: one launch streams every touched expert's weights once and each expert's
        tiles run its own rows, so the measured set nearest the touched experts' size on one
        GPU, at the rows each expert gets."""
        family, fmt, bf16_tflops = self.table_key
        touched = touched_share(self.arch, rows)
        rate = measured_for(family, fmt, bf16_tflops, self.expert_layer_gpu * touched)
        if rate is None or self.weight_only:
            return self.train_fraction
        return compute_fraction(rate.table, rows_per_expert(self.arch, rows))

    def gemm_parts(self, rows: float) -> tuple[float, float]:
        """(weight-stream time, busy time) of one stage's GEMMs over `rows` tokens: a group
        of kernels takes the larger of its weight stream and its math (loads and MMAs overlap
        inside a GEMM); an MoE's routed experts are a group of their own, at each expert's
        rows, the rest at the rows each rank attends."""
        arch = self.arch
        mp = self.tp * self.pp
        dense_rows = rows * self.split.sequence_share
        dense_bytes = self.weights_gpu - self.expert_weights_gpu
        dense_stream = dense_bytes / self.weight_bandwidth
        dense_flops = 2.0 * (arch.active_params - self.routed_active) * rows / mp
        dense_math = dense_flops / (self.peak * self.gemm_fraction(dense_rows))
        if not arch.is_moe:
            return dense_stream, max(dense_stream, dense_math)
        touched = touched_share(arch, rows)
        expert_stream = self.expert_weights_gpu * touched / self.weight_bandwidth
        expert_flops = 2.0 * self.routed_active * rows / mp
        expert_math = expert_flops / (self.peak * self.expert_fraction(rows))
        busy = max(dense_stream, dense_math) + max(expert_stream, expert_math)
        return dense_stream + expert_stream, busy

    def prompt_attention_s(self, tokens: float, position: float) -> float:
        """Attention FLOPs of `tokens` prompt tokens at mean position `position`, one stage."""
        arch = self.arch
        flops = 2.0 * self.stage_layers * tokens * position * arch.heads
        flops *= arch.qk_head_dim + arch.value_head_dim
        return flops / (self.tp * self.attention)

    def elementwise_s(self, rows: float) -> float:
        """The step's memory-bound elementwise kernels over `rows` tokens, one stage: per layer
        two fused residual-add + RMSNorm kernels (each reads x and the residual, writes both:
        4·h values) and the gated activation (reads 2·f/t, writes f/t), in 16 bits (vLLM's
        fused_add_rms_norm and silu_and_mul, csrc/layernorm_kernels.cu and
        csrc/activation_kernels.cu). Norms run on the full hidden size on every TP rank."""
        arch = self.arch
        ffn = arch.expert_ffn * arch.active_experts if arch.is_moe else arch.ffn
        norms = 8.0 * arch.hidden * self.split.sequence_share
        values = norms + (3.0 if arch.gated_ffn else 2.0) * ffn / self.tp
        moe = expanded_rows_s(
            arch, self.split, rows, self.moe_layers_per_stage, self.expanded_bytes, self.bandwidth
        )
        return self.stage_layers * rows * values * 2.0 / self.bandwidth + moe

    def tp_comm_s(self, rows: float) -> float:
        """Two all-reduces per layer of `rows` × hidden 16-bit activations over TP; under
        attention data-parallel, each MoE layer's dispatch and combine instead."""
        if self.split.attention_dp:
            return dispatch_s(
                self.arch, self.hw, self.split, rows, self.moe_layers_per_stage, self.fmt
            )
        if self.tp <= 1:
            return 0.0
        message = rows * self.arch.hidden * 2.0
        latency = self.tp_latency if message < 65536 else self.tp_latency_large
        return 2.0 * self.stage_layers * allreduce_s(message, self.tp, self.tp_bus, latency)

    def decode_stage_s(self, batch: float, *, prefill: bool = True) -> dict[str, float]:
        """One pipeline stage's share of an engine step for `batch` sequences in flight: the
        kernels in turn, prompt chunks mixed in where the engine mixes them (`prefill=False`:
        a decode-only pool, its prompts prefilled elsewhere)."""
        micro = max(1.0, batch / self.pp)
        prefill_rows = micro * self.prompt / max(1.0, self.output) if prefill else 0.0
        rows = micro + prefill_rows if self.mixed else micro
        stream, math_s = self.gemm_parts(rows)
        kv = micro * self.context * self.kv_token_gpu * PAGED_ATTENTION_SLOWDOWN / self.bandwidth
        prompt_s = self.prompt_attention_s(prefill_rows, self.prompt / 2)
        if not self.mixed and prefill_rows > 0:
            # Prefill batches of their own, one chunk at a time, between decode steps.
            chunk = min(CHUNK_TOKENS, max(1.0, prefill_rows))
            p_stream, p_math = self.gemm_parts(chunk)
            per_chunk = max(p_stream, p_math) + self.tp_comm_s(chunk) + self.elementwise_s(chunk)
            prompt_s += prefill_rows / chunk * per_chunk
        gaps = self.kernels_per_stage() * GRAPH_KERNEL_GAP_S
        return {
            "weights": stream,
            "compute": max(0.0, math_s - stream),
            "kv_cache": kv,
            "prefill": prompt_s,
            "elementwise": self.elementwise_s(rows),
            "tp_comm": self.tp_comm_s(rows),
            "kernel_gaps": gaps,
        }

    def kernels_per_stage(self) -> float:
        """Kernels one stage's step launches: a decode layer's, plus an MoE layer's router,
        top-k, permute and finalize (and dispatch and combine under attention DP)."""
        moe = MOE_EXTRA_KERNELS + (DISPATCH_KERNELS if self.split.attention_dp else 0)
        return self.stage_layers * DECODE_KERNELS_PER_LAYER + self.moe_layers_per_stage * moe

    def tpot_decode_s(self, batch: float, *, prefill: bool = True) -> float:
        stage = sum(self.decode_stage_s(batch, prefill=prefill).values())
        return self.pp * stage + (self.pp - 1) * self.pp_latency

    def prefill_tokens_per_s(self, prompt: float) -> float:
        """Prompt tokens/s of a replica that only prefills, its steps full chunks of prompts
        (several short prompts share a chunk)."""
        chunk = float(CHUNK_TOKENS)
        stream, math_s = self.gemm_parts(chunk)
        per_chunk = max(stream, math_s) + self.tp_comm_s(chunk) + self.elementwise_s(chunk)
        per_token = per_chunk / chunk + self.prompt_attention_s(1.0, max(1.0, prompt) / 2)
        # Pipeline stages each hold a chunk: the replica finishes one chunk per stage time.
        return 1.0 / per_token

    def ttft_s(self, prompt: float) -> float:
        """One prompt's prefill alone: each stage's t GPUs in turn, in chunks of the engine's
        size, each chunk a step of its own."""
        rows = max(1.0, prompt)
        chunk = min(CHUNK_TOKENS, rows)
        stream, math_s = self.gemm_parts(chunk)
        per_chunk = max(stream, math_s) + self.tp_comm_s(chunk) + self.elementwise_s(chunk)
        stage = rows / chunk * per_chunk + self.prompt_attention_s(rows, rows / 2)
        return self.pp * stage + (self.pp - 1) * self.pp_latency

    def throughput(
        self, batch: float, prompt: float, output: float, *, prefill: bool = True
    ) -> tuple[float, float]:
        """(generated tokens/s of the replica, the share of step time spent on prefill)."""
        parts = self.decode_stage_s(batch, prefill=prefill)
        step = self.pp * sum(parts.values()) + (self.pp - 1) * self.pp_latency
        micro = max(1.0, batch / self.pp)
        plain_stream, plain_math = self.gemm_parts(micro)
        decode_only = max(plain_stream, plain_math) + self.tp_comm_s(micro)
        decode_only += self.elementwise_s(micro)
        decode_only += parts["kv_cache"] + parts["kernel_gaps"]
        share = max(0.0, 1.0 - self.pp * decode_only / step) if step > 0 else 0.0
        return batch / step, share


_RATES: memo.Cache = {}
_RATES_MAX = 4096


def _rates(
    workload: InferenceWorkload,
    hw: Hardware,
    tp: int,
    pp: int,
    ep: int = 1,
    attention_dp: bool = False,
) -> Rates:
    """Rates per (workload, hardware, replica shape), memoised for the search by the
    workload's identity (`memo.py`: workloads hold lists, unhashable)."""
    key = (id(workload), hw, tp, pp, ep, attention_dp)
    found: Rates | None = memo.cached(_RATES, key, workload)
    if found is not None:
        return found
    layout = serving_layout(tp, pp, hw.gpus_per_node, ep=ep, attention_dp=attention_dp)
    rates = Rates(workload, resolve_arch(workload.model), hw, layout)
    return memo.keep(_RATES, key, workload, rates, _RATES_MAX)


def replica_tokens_per_s(
    workload: InferenceWorkload,
    hw: Hardware,
    tp: int,
    pp: int,
    batch: int,
    ep: int = 1,
    attention_dp: bool = False,
) -> float:
    """Generated tokens/s of one replica of tp × pp GPUs decoding `batch` sequences."""
    prompt, output, _ = request_shape(workload)
    return _rates(workload, hw, tp, pp, ep, attention_dp).throughput(batch, prompt, output)[0]
