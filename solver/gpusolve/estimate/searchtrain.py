"""The training layout search (`search_training`): the GPU counts, the model-parallel
splits, and for each the least sharding, expert parallelism and recomputation that fit, with
the largest micro-batch (`search.py` describes the whole search)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from gpusolve.estimate.calibration import calibration_for
from gpusolve.estimate.compute import compute_precision, weight_flops_per_token
from gpusolve.estimate.efficiency import efficiency_of, gemm_shape_factor, mamf_fraction
from gpusolve.estimate.evaluation import evaluate
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import ConfigEstimate, Layout, overhead_bytes, usable_memory_bytes
from gpusolve.estimate.searchcore import (
    Attempts,
    SearchResult,
    SearchScope,
    faster,
    node_counts,
    where,
)
from gpusolve.estimate.shapes import Arch
from gpusolve.estimate.trainshape import stage_memory_for
from gpusolve.estimate.units import SECONDS_PER_HOUR
from gpusolve.models.params import Params
from gpusolve.models.requirements import Training, Workload

MICRO_BATCHES = (1, 2, 4, 8, 16, 32, 64)
TP_CHOICES = (1, 2, 4, 8)
CP_CHOICES = (1, 2, 4, 8)
LONG_SEQUENCE = 16384  # context parallelism is searched from this sequence length on
VIRTUAL_STAGES = (2, 4)
BUBBLE_WORTH = 0.03  # interleaving is tried when the bubble exceeds this share of the step
PATIENCE = 6  # feasible (tp, cp, pp) splits without improvement before a GPU count is settled
REFINE_COUNTS = 8  # node counts bisected between a miss and a hit of the deadline


def _gpu_counts(gpn: int, limit: int, whole_nodes: bool) -> list[tuple[int, int]]:
    counts: list[tuple[int, int]] = []
    if not whole_nodes:
        g = 1
        while g < gpn:
            if gpn % g == 0:
                counts.append((g, 1))
            g *= 2
    counts += [(n * gpn, n) for n in node_counts(limit)]
    return counts


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _mp_splits(workload: Workload, arch: Arch, gpus: int, gpn: int) -> list[tuple[int, int, int]]:
    """(tp, cp, pp) splits of `gpus`, smallest model-parallel size first."""
    cps = CP_CHOICES if workload.seq_len >= LONG_SEQUENCE else (1,)
    out: list[tuple[int, int, int]] = []
    for tp in TP_CHOICES:
        if tp > min(gpn, gpus) or gpus % tp or gpn % tp or arch.heads % tp:
            continue
        for cp in cps:
            if gpus % (tp * cp) or workload.seq_len % (2 * cp):
                continue
            for pp in _divisors(gpus // (tp * cp)):
                if pp <= arch.layers:
                    out.append((tp, cp, pp))
    out.sort(key=lambda x: (x[0] * x[1] * x[2], x[1], x[0]))
    return out


def _accum(workload: Training, dp: int, micro_batch: int, pp: int) -> int | None:
    """Micro-steps per optimizer step. A given global batch is kept exactly (it is part of
    the training recipe): None when micro_batch × dp does not divide it. Without one,
    enough micro-batches to keep a pipeline's bubble small (4 per stage)."""
    if workload.global_batch is not None:
        if workload.global_batch % (micro_batch * dp):
            return None
        return workload.global_batch // (dp * micro_batch)
    return 4 * pp if pp > 1 else 1


def _shardings(workload: Training, nodes: int) -> tuple[str, ...]:
    if workload.sharding is not None:
        return (workload.sharding,)
    if nodes > 1:
        return ("ddp", "zero1", "zero2", "fsdp_hybrid", "zero3")
    return ("ddp", "zero1", "zero2", "zero3")


def _checkpointings(workload: Training) -> tuple[str, ...]:
    if workload.gradient_checkpointing is not None:
        return (workload.gradient_checkpointing,)
    # With flash attention, selective recomputation stores and costs what no recomputation
    # does (the attention scores are never stored), so it is not a separate choice.
    return ("none", "full") if workload.flash_attention else ("none", "selective", "full")


def _expert_degrees(arch: Arch, dp: int) -> tuple[int, ...]:
    """1, then powers of two dividing both the experts and DP: inside a node and across
    nodes (DeepSeek-V3 runs EP64 over eight nodes)."""
    if not arch.is_moe or dp <= 1:
        return (1,)
    out = [1]
    e = 2
    while e <= min(dp, arch.experts):
        if arch.experts % e == 0 and dp % e == 0:
            out.append(e)
        e *= 2
    return tuple(out)


def _time_lower_bound(
    workload: Training,
    arch: Arch,
    hw: Hardware,
    gpus: int,
    pp: int,
    dp: int,
) -> float:
    """No layout on `gpus` GPUs with this PP and DP trains faster than this: the GEMM FLOPs
    (6·N, 4·N for a frozen base) at the card's achievable GEMM rate and the smallest pipeline
    bubble (micro-batch 1, no interleaving beyond 4). Used to skip layouts that cannot win."""
    if workload.measured is not None:
        return 0.0  # a measured run calibrates the model on every card; do not prune on it
    fmt = compute_precision(workload.kind, workload.precision, workload.optimizer)
    tflops = hw.card.tflops_at(fmt)
    accum = _accum(workload, dp, 1, pp)
    if tflops is None or accum is None:
        return 0.0
    eff = efficiency_of(hw.card)
    rate = tflops * 1e12 * mamf_fraction(hw.card, eff, fmt) * gemm_shape_factor(eff.family)
    bubble = (accum + (pp - 1) / max(VIRTUAL_STAGES)) / accum
    flops = weight_flops_per_token(arch, workload.kind) * float(workload.tokens or 0.0)
    return flops * bubble / (gpus * rate)


class _Fit:
    """Memory-fit checks on the fullest pipeline rank, the ranks' memory memoised: the search
    asks about the same layouts many times."""

    def __init__(self, workload: Training, arch: Arch, hw: Hardware, params: Params) -> None:
        self.w, self.arch, self.gpn, self.params = workload, arch, hw.gpus_per_node, params
        self.usable = usable_memory_bytes(hw.card, params.headroom)
        cal = calibration_for(workload, arch, params, hw.card)
        self.act_factor = 1.0 if cal is None else cal.activation_factor

    def __call__(self, lay: Layout) -> bool:
        free = self.usable - overhead_bytes(self.params, lay.gpus)
        stages = stage_memory_for(self.w, self.arch, self.gpn, lay, self.params)
        need = max(st.states.total_bytes + st.activations_bytes * self.act_factor for st in stages)
        return need <= free


def _candidates_for(
    workload: Training,
    arch: Arch,
    nodes: int,
    split: tuple[int, int, int],
    dp: int,
    ckpt: str,
    fit: _Fit,
    micro_batches: tuple[int, ...],
) -> list[Layout]:
    """The layouts worth pricing for one split and recomputation level: the least sharding
    and expert parallelism that fit with their largest micro-batch, the same with micro-batch
    1 under a pipeline (a smaller bubble); `_interleaved` adds 2 and 4 virtual stages."""
    tp, cp, pp = split
    chosen: Layout | None = None
    for sharding in _shardings(workload, nodes):
        for ep in _expert_degrees(arch, dp):
            fit_mb: Layout | None = None
            for mb in micro_batches:
                accum = _accum(workload, dp, mb, pp)
                if accum is None:
                    continue
                lay = Layout(nodes, tp, pp, dp, sharding, ckpt, mb, accum, ep=ep, cp=cp)
                if not fit(lay):
                    break
                fit_mb = lay
            if fit_mb is not None:
                chosen = fit_mb
                break
        if chosen is not None:
            break
    if chosen is None:
        return []
    out = [chosen]
    if pp > 1 and chosen.micro_batch > 1:
        accum = _accum(workload, dp, 1, pp)
        if accum is not None:
            out.append(replace(chosen, micro_batch=1, grad_accum=accum))
    return out


def _interleaved(arch: Arch, lay: Layout, fit: _Fit) -> list[Layout]:
    """The same layout with 2 and 4 virtual stages per pipeline rank, where they fit."""
    out = []
    for vp in VIRTUAL_STAGES:
        if arch.layers % (lay.pp * vp) == 0:
            candidate = replace(lay, vp=vp)
            if fit(candidate):
                out.append(candidate)
    return out


def _best_for_gpus(
    workload: Training,
    arch: Arch,
    hw: Hardware,
    params: Params,
    gpus: int,
    nodes: int,
    fit: _Fit,
) -> tuple[ConfigEstimate | None, ConfigEstimate | None]:
    """(fastest feasible layout, closest infeasible attempt) on `gpus` GPUs."""
    gpn = hw.gpus_per_node
    micro_batches = (
        (workload.micro_batch,) if "micro_batch" in workload.model_fields_set else MICRO_BATCHES
    )
    best: ConfigEstimate | None = None
    misses = Attempts()
    splits = _mp_splits(workload, arch, gpus, gpn)
    plain_mp = 0
    stale = 0  # feasible splits in a row that did not beat the best
    for split in splits:
        tp, cp, pp = split
        mp = tp * cp * pp
        if plain_mp and mp > plain_mp:
            break  # a plain layout (no recomputation, ZeRO ≤ 1) won at a smaller size
        if stale >= PATIENCE:
            break
        dp = gpus // mp
        if workload.global_batch is not None and workload.global_batch % dp:
            continue  # this DP cannot split the global batch evenly
        if best is not None and best.time_to_train_s is not None:
            bound = _time_lower_bound(workload, arch, hw, gpus, pp, dp)
            if bound >= best.time_to_train_s:
                continue
        improved = seen_feasible = False
        for ckpt in _checkpointings(workload):
            candidates = _candidates_for(workload, arch, nodes, split, dp, ckpt, fit, micro_batches)
            queue = list(candidates)
            while queue:
                lay = queue.pop(0)
                est = evaluate(workload, hw, lay, params)
                step = est.step
                if lay.vp == 1 and step is not None and step.bubble_s > BUBBLE_WORTH * step.step_s:
                    queue += _interleaved(arch, lay, fit)  # only where the bubble is worth it
                if est.feasible:
                    seen_feasible = True
                    if faster(est, best):
                        best, improved = est, True
                    if ckpt == "none" and lay.zero_stage <= 1:
                        plain_mp = mp
                else:
                    misses.near_miss(est)
        if improved:
            stale = 0
        elif seen_feasible:
            stale += 1
    if best is None and misses.closest is None and splits:
        # Nothing fits in memory: report the leanest layout's shortfall.
        tp, cp, pp = max(splits, key=lambda x: (x[0] * x[1] * x[2], x[0]))
        dp = gpus // (tp * cp * pp)
        sharding = _shardings(workload, nodes)[-1]
        ckpt = _checkpointings(workload)[-1]
        mb = micro_batches[0]
        accum = _accum(workload, dp, mb, pp) or max(1, (workload.global_batch or dp) // dp)
        eps = _expert_degrees(arch, dp)
        lay = Layout(nodes, tp, pp, dp, sharding, ckpt, mb, accum, ep=eps[-1], cp=cp)
        misses.closest = evaluate(workload, hw, lay, params)
    return best, misses.closest


def _refine(lo: int, hi: int) -> list[int]:
    """Up to REFINE_COUNTS node counts strictly between lo and hi, evenly spaced."""
    gap = hi - lo
    if gap <= 1:
        return []
    step = max(1, math.ceil(gap / (REFINE_COUNTS + 1)))
    return list(range(lo + step, hi, step))


def search_training(workload: Training, scope: SearchScope) -> SearchResult:
    arch, hw, params, limit = scope.arch, scope.hw, scope.params, scope.limit
    whole_nodes, every_size = scope.whole_nodes, scope.every_size
    kept = Attempts()
    feasible, rejections = kept.feasible, kept.rejections
    limit_note = f"limit {limit}"
    if hw.inter_node_gbps_per_gpu <= 0 and limit > 1:
        limit, limit_note = 1, "no inter-node fabric, so one node at most"
    fit = _Fit(workload, arch, hw, params)
    counts = _gpu_counts(hw.gpus_per_node, limit, whole_nodes)
    results: dict[int, tuple[ConfigEstimate | None, ConfigEstimate | None]] = {}

    def run(gpus: int, nodes: int) -> tuple[ConfigEstimate | None, ConfigEstimate | None]:
        if gpus not in results:
            results[gpus] = _best_for_gpus(workload, arch, hw, params, gpus, nodes, fit)
        return results[gpus]

    if workload.deadline_hours is not None and len(counts) > 1:
        # If even the largest size misses the deadline, no size meets it: sample the
        # powers of two only, enough to show how time falls with nodes.
        top_best, _ = run(*counts[-1])
        if top_best is not None and not top_best.meets_deadline:
            counts = [c for c in counts if c[1] & (c[1] - 1) == 0 or c == counts[-1]]
    best_so_far: ConfigEstimate | None = None
    for gpus, nodes in counts:
        best, closest = run(gpus, nodes)
        if best is None:
            if closest is not None:
                rejections.append(Attempts(closest=closest).closest_line(where(hw, gpus, nodes)))
            elif workload.global_batch is not None:
                rejections.append(
                    f"{where(hw, gpus, nodes)}: no split of the global batch of "
                    f"{workload.global_batch} sequences over the data-parallel ranks fits"
                )
            continue
        if best_so_far is not None and not faster(best, best_so_far):
            if workload.deadline_hours is None or best_so_far.meets_deadline:
                break  # more GPUs no longer help (communication dominates)
            continue  # a deadline still unmet: a larger count may divide the batch better
        if (
            best.meets_deadline
            and best_so_far is not None
            and best_so_far.nodes > 0
            and not best_so_far.meets_deadline
        ):
            fewest = _bisect_deadline(hw, best_so_far, best, run)
            if every_size and fewest is not best:
                feasible.append(fewest)  # the fewest nodes, then the grid's count above it
            else:
                best = fewest
        feasible.append(best)
        best_so_far = best
        if best.meets_deadline and not every_size:
            break  # without a deadline every size meets it: the first wins
    if (
        workload.deadline_hours is not None
        and feasible
        and not any(e.meets_deadline for e in feasible)
    ):
        fastest = min(feasible, key=lambda e: e.time_to_train_s or math.inf)
        hours = (fastest.time_to_train_s or 0.0) / SECONDS_PER_HOUR
        rejections.append(
            f"deadline of {workload.deadline_hours:g} h not met on {hw.label or hw.card.id}: "
            f"the fastest layout found takes {hours:,.1f} h on {fastest.gpus} GPUs "
            f"({fastest.nodes} node(s); {limit_note})"
        )
    return kept.result()


def _bisect_deadline(
    hw: Hardware,
    miss: ConfigEstimate,
    hit: ConfigEstimate,
    run: Callable[[int, int], tuple[ConfigEstimate | None, ConfigEstimate | None]],
) -> ConfigEstimate:
    """The fewest nodes between a count that misses the deadline and one that meets it."""
    counts = _refine(miss.nodes, hit.nodes)
    lo, hi = 0, len(counts)
    found = hit
    while lo < hi:
        mid = (lo + hi) // 2
        nodes = counts[mid]
        best, _ = run(nodes * hw.gpus_per_node, nodes)
        if best is not None and best.meets_deadline:
            found, hi = best, mid
        else:
            lo = mid + 1
    return found
