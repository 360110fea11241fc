"""Training step time from its parts: `training_step`.

Notation, per GPU of one pipeline rank (Narayanan et al. 2021 §2-3, Korthikanti et al. 2022 §4):
  b micro-batch (sequences)   s sequence length   h hidden   a heads   e activation bytes
  t TP   c CP   p PP   v virtual stages per rank   d DP   x EP   m micro-batches per step
  M = b·s/c tokens a GPU's layers see per micro-batch; L_r layers on the fullest rank.

  step = (m + (p − 1)/v) · (F + B + P)  +  DP_exposed  +  optimizer

The pipeline term is 1F1B and interleaved 1F1B (bubble (p − 1)/(v·m) of the steady state,
Narayanan §2.2.1-2.2.2). F and B are one micro-batch's forward and backward through the
slowest rank's layers, P its stage-boundary sends. The slowest rank is the slower per
micro-batch of the last rank and the fullest other one: the last rank also holds the LM head
and the loss, and any multi-token prediction modules (per depth one more block of the deepest
kind, a 2h x h projection and one more pass through the head and loss, DeepSeek-V3 §2.2).

  compute   every GEMM at the roofline max(FLOPs / (peak·gemm), bytes / (bandwidth·memory));
            backward GEMMs are twice the forward (input and weight gradients; once for a frozen
            LoRA base). Attention: a fused kernel (FlashAttention) at its own forward and
            backward fractions, its causal half skipped; otherwise batched GEMMs plus the
            score-matrix softmax and dropout as streaming bytes. Norms, residual adds, dropout,
            activations and MoE token permutes stream their tensors (read + write) at the
            achievable bandwidth; backward streams twice what forward does.
  TP        four collectives per layer and micro-batch (two forward, two backward: all-reduces,
            or with sequence parallelism all-gathers and reduce-scatters of the same volume) on
            the critical path; `tp_comm_overlap` hides the backward ones under the weight-
            gradient GEMMs (Korthikanti §5, Table 4) and, set to "full", the forward ones too
            (Transformer Engine userbuffers).
  CP        ring attention: the local K and V travel c − 1 hops per layer (twice in backward),
            hidden behind the attention kernel when shorter.
  EP        four all-to-alls per MoE layer (dispatch and combine, forward and backward); the
            share leaving the node crosses the NIC. `ep_comm_overlap` hides them behind the
            layer's compute (DeepSeek-V3's DualPipe), which then runs on the SMs the
            communication kernels leave free (20 of 132, §3.2.2): the overlap is not free.
  PP        one activation per boundary and direction per virtual stage (/t with scatter-gather
            or sequence parallelism), on the critical path.
  recompute full reruns F (TP collectives included) inside B; selective reruns the attention
            core (nothing with FlashAttention, whose backward recomputes it anyway).

DP, once per step (dpcomm.py): DDP all-reduces the gradients; ZeRO-1/2 (the distributed optimizer)
reduce-scatter them and all-gather the updated parameters (ZeRO-2 reduce-scatters every
micro-batch); ZeRO-3/FSDP all-gather parameters for forward and backward and reduce-scatter
gradients every micro-batch; hybrid FSDP does that inside a node and all-reduces its shard
across nodes. With `dp_comm_overlap` the gradient buckets go out during the last micro-batch's
backward (PyTorch DDP, Megatron --overlap-grad-reduce) and the parameter gather behind the next
forward: only what does not fit behind them, and the last bucket, is exposed. ZeRO-3 prefetches
the next layer's parameters behind the current layer's compute.

optimizer Adam's update streams the master weights, moments and gradients of the local shard.

Every term is returned (`StepBreakdown`), so MFU and HFU are results, not inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import lru_cache

from gpusolve.estimate.collectives import all_to_all_s, allreduce_s, group
from gpusolve.estimate.compute import EIGHT_BIT, attention_precision
from gpusolve.estimate.dpcomm import data_parallel_s
from gpusolve.estimate.efficiency import Efficiency, mamf_fraction
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layerwork import (
    Device,
    LayerTimes,
    LayerWork,
    device,
    gemm_of,
    gemm_time,
    layer_times,
    layer_work,
)
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.stepshape import Framework, StepBreakdown, StepShape

# DualPipe's all-to-all kernels run on SMs of their own while the chunk they hide behind
# computes: "only 20 SMs are sufficient to fully utilize the bandwidths of IB and NVLink"
# (DeepSeek-V3, arXiv:2412.19437 §3.2.2), of the H800's 132 SMs (the H100 SXM5's count;
# the H800 differs only in its links). The overlapped MoE layers compute on the other 112.
# Other cards take the same share (an assumption: no other card's figure is published).
EP_OVERLAP_SM_SHARE = 20 / 132

# Bytes moved per logit by the vocabulary-parallel cross-entropy, Megatron-core's default
# (core_r0.8.0 tensor_parallel/cross_entropy.py; `cross_entropy_loss_fusion` is off by
# default): forward, the 16-bit logits cast to fp32 (2 read + 4 written), their max (4 read),
# the max subtracted (4 + 4), exp in place (4 + 4), the sum (4), the softmax divided in place
# (4 + 4); backward, the softmax scaled by the loss's gradient in place (4 + 4) and cast back
# to 16 bits for the output layer's GEMMs (4 + 2). The target's entry is one per token.
LOSS_FWD_BYTES = 2 + 4 + 4 + 8 + 8 + 4 + 8
LOSS_BWD_BYTES = 8 + 6


# --------------------------------------------------------------------------- the step


def training_step(
    arch: Arch, sh: StepShape, hw: Hardware, eff: Efficiency, fw: Framework
) -> StepBreakdown:
    head_mamf = None
    if sh.gemm_format in EIGHT_BIT:
        head_mamf = mamf_fraction(hw.card, eff, attention_precision(sh.gemm_format))
    mamf = mamf_fraction(hw.card, eff, sh.gemm_format)
    return _training_step(arch, sh, hw, eff, fw, mamf, head_mamf)


@lru_cache(maxsize=4096)
def _training_step(
    arch: Arch,
    sh: StepShape,
    hw: Hardware,
    eff: Efficiency,
    fw: Framework,
    gemm_mamf: float,
    head_mamf: float | None = None,
) -> StepBreakdown:
    dev = device(hw, eff, sh, gemm_mamf, head_mamf)
    elem = 1.0 if sh.gemm_format in EIGHT_BIT else sh.act_bytes
    dense = layer_work(arch, sh, moe=False, elem=elem)
    lt_dense = layer_times(dense, dev, flash=sh.flash_attention, frozen_base=sh.frozen_base)
    if arch.moe_layers:
        moe = layer_work(arch, sh, moe=True, elem=elem)
        lt_moe = layer_times(moe, dev, flash=sh.flash_attention, frozen_base=sh.frozen_base)
    else:
        moe, lt_moe = dense, lt_dense
    kinds = _Layers(dense, lt_dense, moe, lt_moe)
    r = _pacing_rank(
        arch, sh, lambda n, head: _rank_micro(arch, sh, hw, fw, dev, elem, kinds, n, head)
    )
    per_micro = r.total_s
    m = sh.grad_accum
    bubble = (sh.pp - 1) / sh.vp * per_micro
    if sh.schedule == "dualpipe" and sh.pp > 1:
        # DeepSeek-V3 Table 2: (PP/2 − 1)(F&B + B − 3W) against 1F1B's (PP − 1)(F + B); with
        # the overlapped F&B chunk taken as F + B and the W terms as hidden, the bubble scales
        # by (PP/2 − 1)/(PP − 1).
        bubble *= (sh.pp / 2 - 1) / (sh.pp - 1)

    # --- data parallelism
    dp_exposed, dp_total, dp_link = data_parallel_s(arch, sh, hw, fw, fwd=r.fwd, bwd=r.bwd, m=m)

    # --- optimizer step (memory-bound)
    local = (sh.trained_dense + sh.trained_expert / max(1, sh.ep)) / (sh.tp * sh.pp)
    if sh.zero_stage >= 1:
        local /= max(1, sh.dp)
    per_param = 2 * sh.optimizer_bytes + 2 * sh.grad_bytes + sh.weight_bytes
    optimizer = local * per_param / dev.stream_bytes_per_s
    if sh.offload_optimizer:
        # ZeRO-Offload (Ren et al. 2021 §4): gradients go to the host and updated weights come
        # back over the host link; the host's Adam overlaps the transfers and is not timed.
        link = sh.host_bytes_per_s
        optimizer = local * (sh.grad_bytes + sh.weight_bytes) / link if link > 0 else math.inf

    return StepBreakdown(
        compute_s=m * (r.fwd + r.bwd),
        recompute_s=m * r.recompute,
        tp_comm_s=m * (r.tp_fwd + r.tp_bwd + r.tp_recompute),
        cp_comm_s=m * (r.cp_fwd + r.cp_bwd),
        ep_comm_s=m * r.ep,
        pp_comm_s=m * r.pp,
        bubble_s=bubble,
        dp_comm_s=dp_exposed,
        optimizer_s=optimizer,
        dp_comm_total_s=dp_total,
        recompute_flops=r.recompute_flops,
        dp_link=dp_link,
        tp_link=r.tp_link,
        pp_link=r.pp_link,
        ep_link=r.ep_link,
    )


@dataclass(frozen=True)
class _Layers:
    """A dense and an MoE layer's work and times (the dense one twice in a dense model)."""

    dense: LayerWork
    lt_dense: LayerTimes
    moe: LayerWork
    lt_moe: LayerTimes


@dataclass(frozen=True)
class _RankMicro:
    """One micro-batch on one pipeline rank: compute, and communication on its path."""

    fwd: float
    bwd: float
    recompute: float
    tp_fwd: float
    tp_bwd: float
    tp_recompute: float
    cp_fwd: float
    cp_bwd: float
    ep: float
    pp: float
    recompute_flops: float  # per step
    tp_link: str
    pp_link: str
    ep_link: str

    @property
    def total_s(self) -> float:
        out = self.fwd + self.bwd + self.recompute + self.tp_fwd + self.tp_bwd
        out += self.tp_recompute + self.cp_fwd + self.cp_bwd
        return out + self.ep + self.pp


def _pacing_rank(arch: Arch, sh: StepShape, micro: Callable[[int, bool], _RankMicro]) -> _RankMicro:
    """One micro-batch on the rank that sets the pipeline's pace: its slowest rank, in seconds.

    1F1B and interleaved: the last rank (the head, the loss and any MTP modules) or the one
    with the most layers. DualPipe (DeepSeek-V3 §3.2.1; deepseek-ai/DualPipe's examples build
    rank r from stages r and PP − 1 − r): each rank runs half the micro-batches through one of
    its stages and half through the other, so its pace is the mean of the two: the rank that
    holds the head and MTP also holds the first stage, which the report pairs with it on
    purpose ("the shallowest layers (including the embedding layer) and deepest layers
    (including the output head) of the model on the same PP rank")."""
    pp = sh.pp
    if sh.schedule == "dualpipe" and pp > 1 and len(sh.stage_layers) == pp:
        memo: dict[tuple[int, bool], _RankMicro] = {}

        def stage(s: int) -> _RankMicro:
            key = (sh.stage_layers[s], s == pp - 1)
            if key not in memo:
                memo[key] = micro(*key)
            return memo[key]

        pairs = [_mean_micro(stage(r), stage(pp - 1 - r)) for r in range(pp // 2)]
        return max(pairs, key=lambda x: x.total_s)
    return max((micro(n, head) for n, head in _ranks(arch, sh)), key=lambda x: x.total_s)


def _mean_micro(a: _RankMicro, b: _RankMicro) -> _RankMicro:
    """The mean micro-batch of a rank that runs `a` and `b` in equal numbers; the links
    named are the slower one's."""
    slow = a if a.total_s >= b.total_s else b
    numbers = {
        f.name: (getattr(a, f.name) + getattr(b, f.name)) / 2
        for f in fields(_RankMicro)
        if f.type in ("float", float)
    }
    return replace(slow, **numbers)


def _ranks(arch: Arch, sh: StepShape) -> list[tuple[int, bool]]:
    """(layers, holds the head) of the ranks that may set the pace: the last rank and the
    fullest other one (without a split, ceil(L/p) layers and the head on one rank)."""
    if not sh.stage_layers:
        return [(math.ceil(arch.layers / sh.pp), True)]
    out = [(sh.stage_layers[-1], True)]
    if len(sh.stage_layers) > 1:
        out.append((max(sh.stage_layers[:-1]), False))
    return out


def _rank_micro(
    arch: Arch,
    sh: StepShape,
    hw: Hardware,
    fw: Framework,
    dev: Device,
    elem: float,
    kinds: _Layers,
    layers_rank: int,
    holds_head: bool,
) -> _RankMicro:
    """F, B and the communication on the critical path of one micro-batch on a rank of
    `layers_rank` transformer layers, with the LM head (and MTP modules) when `holds_head`."""
    dense, lt_dense, moe, lt_moe = kinds.dense, kinds.lt_dense, kinds.moe, kinds.lt_moe
    mtp = sh.mtp_depth if holds_head else 0
    moe_share = arch.moe_layers / arch.layers if arch.is_moe else 0.0
    # The MTP blocks are shaped like the deepest layer (MoE in an MoE model).
    moe_rank = layers_rank * moe_share + (mtp if arch.moe_layers else 0)
    blocks = layers_rank + mtp
    dense_rank = blocks - moe_rank

    head_fwd, head_bwd = _head_times(arch, sh, dev, elem, holds_head, mtp)

    def per_rank(dense_value: float, moe_value: float) -> float:
        return dense_rank * dense_value + moe_rank * moe_value

    fwd = per_rank(lt_dense.fwd_s, lt_moe.fwd_s) + head_fwd
    bwd = per_rank(lt_dense.bwd_s, lt_moe.bwd_s) + head_bwd
    wgrad = per_rank(lt_dense.wgrad_s, lt_moe.wgrad_s)
    attn_fwd = per_rank(lt_dense.attention_fwd_s, lt_moe.attention_fwd_s)

    # --- tensor parallelism: 2 collectives forward, 2 backward, per layer
    tp_g = group(hw, sh.tp, 1)
    tp_one = allreduce_s(dense.tp_message_bytes, sh.tp, tp_g.bus, tp_g.latency)
    tp_fwd = 2 * blocks * tp_one
    tp_bwd = 2 * blocks * tp_one
    if fw.tp_comm_overlap in ("backward", "full"):
        tp_bwd = max(0.0, tp_bwd - wgrad)
    if fw.tp_comm_overlap == "full":
        tp_fwd = max(0.0, tp_fwd - (fwd - head_fwd - attn_fwd))

    attn_bwd = per_rank(lt_dense.attention_bwd_s, lt_moe.attention_bwd_s)
    cp_fwd, cp_bwd = _cp_times(sh, hw, dense, blocks, attn_fwd, attn_bwd)
    ep_s, ep_link = _ep_time(arch, sh, hw, fw, moe, lt_moe, moe_rank)

    # --- recomputation
    recompute = 0.0
    recompute_flops = 0.0
    tp_recompute = 0.0
    if sh.checkpointing == "full":
        recompute = fwd - head_fwd
        tp_recompute = tp_fwd
        recompute_flops = per_rank(_forward_flops(dense), _forward_flops(moe)) * sh.grad_accum
    elif sh.checkpointing == "selective" and not sh.flash_attention:
        recompute = attn_fwd
        recompute_flops = blocks * dense.attention_flops * sh.grad_accum

    pp_s, pp_link = _pp_time(sh, hw, fw, dense)

    return _RankMicro(
        fwd=fwd,
        bwd=bwd,
        recompute=recompute,
        tp_fwd=tp_fwd,
        tp_bwd=tp_bwd,
        tp_recompute=tp_recompute,
        cp_fwd=cp_fwd,
        cp_bwd=cp_bwd,
        ep=ep_s,
        pp=pp_s,
        recompute_flops=recompute_flops,
        tp_link=tp_g.link,
        pp_link=pp_link,
        ep_link=ep_link,
    )


def _head_times(
    arch: Arch, sh: StepShape, dev: Device, elem: float, holds_head: bool, mtp: int
) -> tuple[float, float]:
    """Forward and backward of the LM head and loss on the last rank, and per MTP depth the
    projection M_k over [RMSNorm(h); RMSNorm(embedding)] (2h -> h) and one more head pass."""
    head_fwd = head_bwd = 0.0
    if holds_head:
        head_elem = sh.act_bytes if sh.gemm_format in EIGHT_BIT else elem  # 16-bit head
        head = gemm_of(sh.tokens_per_micro, arch.hidden, arch.vocab / sh.tp, head_elem)
        one_head = max(head.flops / dev.head_gemm_flops, head.bytes / dev.stream_bytes_per_s)
        logits = sh.tokens_per_micro * arch.vocab / sh.tp  # this rank's share
        head_fwd = one_head + logits * LOSS_FWD_BYTES / dev.stream_bytes_per_s
        head_bwd = (1 if sh.frozen_base else 2) * one_head + logits * LOSS_BWD_BYTES / (
            dev.stream_bytes_per_s
        )
    if mtp:
        proj = gemm_time(
            gemm_of(sh.tokens_per_micro, 2 * arch.hidden, arch.hidden / sh.tp, elem), dev
        )
        head_fwd += mtp * (head_fwd + proj)
        head_bwd += mtp * (head_bwd + (1 if sh.frozen_base else 2) * proj)
    return head_fwd, head_bwd


def _cp_times(
    sh: StepShape, hw: Hardware, dense: LayerWork, blocks: float, attn_fwd: float, attn_bwd: float
) -> tuple[float, float]:
    """Context parallelism: the ring exchange of K and V, exposed beyond attention."""
    if sh.cp <= 1:
        return 0.0, 0.0
    cp_g = group(hw, sh.cp, sh.tp)
    hop = dense.kv_bytes / cp_g.bus + cp_g.latency
    ring = (sh.cp - 1) * hop * blocks
    return max(0.0, ring - attn_fwd), max(0.0, 2 * ring - attn_bwd)


def _ep_time(
    arch: Arch,
    sh: StepShape,
    hw: Hardware,
    fw: Framework,
    moe: LayerWork,
    lt_moe: LayerTimes,
    moe_rank: float,
) -> tuple[float, str]:
    """Expert parallelism: four all-to-alls per MoE layer, and the link they run on."""
    if not moe_rank or sh.ep <= 1:
        return 0.0, "none"
    ep_g = group(hw, sh.ep, sh.tp * sh.cp)
    # FP8 recipes dispatch in FP8 and combine in BF16 (DeepSeek-V3 §3.3); the backward
    # sends the same volumes the other way.
    dispatch_b = 1.0 if sh.gemm_format in EIGHT_BIT else sh.act_bytes
    dispatch = all_to_all_s(moe.a2a_tokens, arch.hidden * dispatch_b, arch, ep_g, hw)
    combine = all_to_all_s(moe.a2a_tokens, arch.hidden * sh.act_bytes, arch, ep_g, hw)
    per_layer = 2 * (dispatch + combine)
    if fw.ep_comm_overlap:
        # The layer's kernels lose the communication SMs for as long as they overlap:
        # the stretch they pay is booked as EP communication (what the overlap costs).
        window = (lt_moe.fwd_s + lt_moe.bwd_s) / (1.0 - EP_OVERLAP_SM_SHARE)
        slowed = window - (lt_moe.fwd_s + lt_moe.bwd_s)
        per_layer = max(0.0, per_layer - window) + slowed
    return moe_rank * per_layer, ep_g.link


def _pp_time(sh: StepShape, hw: Hardware, fw: Framework, dense: LayerWork) -> tuple[float, str]:
    """Pipeline boundaries: one activation per boundary and direction per virtual stage."""
    if sh.pp <= 1:
        return 0.0, "none"
    pp_g = group(hw, 2, sh.tp * sh.cp * sh.dp)
    split = sh.tp if (fw.pp_scatter_gather or sh.sequence_parallel) else 1
    msg = dense.tp_message_bytes / split
    bus = pp_g.bus if pp_g.nodes == 1 else hw.nic_bytes_per_s()
    return (2 * sh.vp * (msg / bus + pp_g.latency) if bus > 0 else math.inf), pp_g.link


def _forward_flops(w: LayerWork) -> float:
    return sum(g.flops for g in w.gemms) + sum(g.flops for g in w.expert_gemms) + w.attention_flops
