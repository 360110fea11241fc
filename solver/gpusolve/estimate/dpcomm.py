"""Data-parallel traffic of one step, exposed and in all (steptime.py's DP paragraph says
what each sharding sends and what overlaps it): DDP all-reduces, ZeRO-1/2 reduce-scatter
and gather, ZeRO-3/FSDP gathers per micro-batch, hybrid FSDP inside a node and across."""

from __future__ import annotations

import math

from gpusolve.estimate.collectives import allreduce_s, gather_s, group
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.stepshape import Framework, StepShape

# Megatron-LM buckets gradients by max(40M, 1M·dp) parameters
# (distributed.DistributedDataParallelConfig, bucket_size default).
BUCKET_PARAMS = 40e6
BUCKET_PARAMS_PER_RANK = 1e6


def data_parallel_s(
    arch: Arch,
    sh: StepShape,
    hw: Hardware,
    fw: Framework,
    *,
    fwd: float,
    bwd: float,
    m: int,
) -> tuple[float, float, str]:
    """(exposed seconds, total seconds, link) of the data-parallel traffic of one step."""
    if sh.dp <= 1:
        return 0.0, 0.0, "none"
    mp = sh.tp * sh.pp
    stride = sh.tp * sh.cp
    out_exposed = out_total = 0.0
    link = "none"
    shards = [(sh.trained_dense / mp, sh.dp)]
    if sh.trained_expert > 0:
        shards.append((sh.trained_expert / (mp * max(1, sh.ep)), max(1, sh.dp // max(1, sh.ep))))
    frozen_dense = max(0.0, arch.dense_params - sh.trained_dense) / mp
    for params, ranks in shards:
        if ranks <= 1:
            continue
        g = group(hw, ranks, stride)
        link = g.link
        if not math.isfinite(g.bus) or g.bus <= 0:
            return math.inf, math.inf, link
        grads = params * sh.grad_bytes
        weights = params * sh.weight_bytes
        if sh.frozen_base:
            weights += frozen_dense * sh.frozen_weight_bytes
        bucket = max(BUCKET_PARAMS, BUCKET_PARAMS_PER_RANK * ranks)
        buckets = max(1, math.ceil(params / bucket))
        # ZeRO-3/FSDP gather and reduce one transformer block at a time (an FSDP unit).
        units = max(buckets, math.ceil(arch.layers / sh.pp))
        if sh.zero_stage == 0:
            grad_t = allreduce_s(grads, ranks, g.bus, g.latency * buckets)
            exposed = _overlapped(grad_t, bwd, buckets, fw.dp_comm_overlap)
            total = grad_t
        elif sh.zero_stage in (1, 2):
            lat = g.gather_latency * buckets
            rs = gather_s(grads, ranks, g.bus, lat)
            ag = gather_s(params * sh.weight_bytes, ranks, g.bus, lat)
            if sh.zero_stage == 2:
                total = m * rs + ag
                exposed = m * _overlapped(rs, bwd, buckets, fw.dp_comm_overlap)
            else:
                total = rs + ag
                exposed = _overlapped(rs, bwd, buckets, fw.dp_comm_overlap)
            exposed += max(0.0, ag - fwd) if fw.dp_comm_overlap else ag
        elif sh.sharding == "fsdp_hybrid" and g.nodes > 1:
            inner = group(hw, g.per_node, stride)
            ag = gather_s(weights, inner.ranks, inner.bus, inner.gather_latency * units)
            rs = gather_s(grads, inner.ranks, inner.bus, inner.gather_latency * units)
            across = group(hw, g.nodes, stride * g.per_node)
            ar = allreduce_s(grads / inner.ranks, g.nodes, across.bus, across.latency * buckets)
            total = m * (2 * ag + rs) + ar
            exposed = m * _prefetched(ag, ag + rs, fwd, bwd, fw.dp_comm_overlap)
            exposed += _overlapped(ar, bwd, buckets, fw.dp_comm_overlap)
        else:
            lat = g.gather_latency * units
            ag = gather_s(weights, ranks, g.bus, lat)
            rs = gather_s(grads, ranks, g.bus, lat)
            total = m * (2 * ag + rs)
            exposed = m * _prefetched(ag, ag + rs, fwd, bwd, fw.dp_comm_overlap)
        out_exposed += exposed
        out_total += total
    return out_exposed, out_total, link


def _overlapped(comm: float, window: float, buckets: int, overlap: bool) -> float:
    """Exposed part of a bucketed gradient reduction started during a backward of `window`
    seconds: what does not fit behind it, and at least the last bucket."""
    if not overlap:
        return comm
    last_bucket = comm / buckets
    return max(last_bucket, comm - window)


def _prefetched(fwd_comm: float, bwd_comm: float, fwd: float, bwd: float, overlap: bool) -> float:
    """ZeRO-3/FSDP: parameter gathers prefetched behind the neighbouring layer's compute."""
    if not overlap:
        return fwd_comm + bwd_comm
    return max(0.0, fwd_comm - fwd) + max(0.0, bwd_comm - bwd)
