"""The inference layout search (`search_inference`): replica shapes TP x PP, the batch each
holds, the fewest replicas that meet the demand, and the disaggregated alternative."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpusolve.estimate.disaggregation import search_disaggregated
from gpusolve.estimate.disaggtext import compare
from gpusolve.estimate.evaluation import evaluate
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import ConfigEstimate
from gpusolve.estimate.replicas import ReplicaShape, replica_shapes
from gpusolve.estimate.searchcore import Attempts, SearchResult, SearchScope
from gpusolve.estimate.serving import (
    amount,
    fill_replicas,
    pool_tokens_per_s,
)
from gpusolve.estimate.servingestimate import batch_limit
from gpusolve.estimate.servingload import replicas_for_sla
from gpusolve.estimate.servingrates import (
    replica_tokens_per_s,
)
from gpusolve.estimate.shapes import Arch, resolve_arch
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload


def _tokens_per_s(
    workload: InferenceWorkload, hw: Hardware, shape: ReplicaShape, batch: int
) -> float:
    """Generated tokens/s of one replica decoding `batch` sequences (the same figure
    `evaluate` reports, without building the whole estimate)."""
    return replica_tokens_per_s(workload, hw, *shape.split, batch, *shape.moe)


def _smallest_batch(
    workload: InferenceWorkload,
    hw: Hardware,
    shape: ReplicaShape,
    replicas: int,
    b_max: int,
    target: float,
) -> int:
    lo, hi = 1, b_max
    while lo < hi:
        mid = (lo + hi) // 2
        if replicas * _tokens_per_s(workload, hw, shape, mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass(frozen=True)
class _Plan:
    """Replicas of one shape for the demand: `batch` sequences on each full replica,
    `sequences` over all of them (the last replica partly filled), or why none."""

    replicas: int = 0
    batch: int = 0
    sequences: int | None = None
    why: str = ""


def _replicas_and_batch(
    workload: InferenceWorkload,
    hw: Hardware,
    shape: ReplicaShape,
    b_max: int,
    max_replicas: int,
) -> _Plan:
    """The fewest replicas of tp × pp that hold the concurrency and deliver the tokens/s,
    each replica timed at the batch it really runs; never more than `max_replicas` (what the
    allowed nodes hold), so a demand no layout meets ends the search with a reason."""
    target = workload.target_tokens_per_s
    conc = workload.concurrency

    def tokens(batch: int) -> float:
        return _tokens_per_s(workload, hw, shape, batch)

    too_many = f"more than the {max_replicas:,} replica(s) the allowed nodes hold"
    if conc is not None:
        r_lo = math.ceil(conc / b_max)
        if r_lo > max_replicas:
            return _Plan(
                why=f"{amount(conc)} concurrent sequences at {b_max} per replica need "
                f"{amount(r_lo)} replicas, {too_many}"
            )

        def fill(r: int) -> tuple[int, int, float]:
            replicas, batch = fill_replicas(conc, math.ceil(conc / r))
            groups = shape.layout(
                hw.gpus_per_node, micro_batch=batch, replicas=replicas, sequences=conc
            ).replica_batches()
            return replicas, batch, pool_tokens_per_s(groups, tokens)

        # More replicas spread the same sequences thinner: throughput grows slowly with R.
        r_hi = max(r_lo, min(conc, max_replicas))
        if target is not None and fill(r_hi)[2] < target:
            one = tokens(1)
            return _Plan(
                why=f"{amount(conc)} concurrent sequences cannot produce {amount(target)} tokens/s "
                f"on at most {r_hi:,} replica(s) (one sequence decodes at most {one:,.0f} tokens/s)"
            )
        lo, hi = r_lo, r_hi
        while target is not None and lo < hi:
            mid = (lo + hi) // 2
            if fill(mid)[2] >= target:
                hi = mid
            else:
                lo = mid + 1
        replicas, batch, _ = fill(lo)
        return _Plan(replicas, batch, conc)
    assert target is not None  # Workload requires a target or a concurrency
    per_replica = tokens(b_max)
    needed = target / per_replica if per_replica > 0 else math.inf
    if needed > max_replicas:
        return _Plan(
            why=f"{amount(target)} tokens/s at {per_replica:,.0f} per replica need "
            f"{amount(needed)} replicas, {too_many}"
        )
    replicas = max(1, math.ceil(needed))
    return _Plan(replicas, _smallest_batch(workload, hw, shape, replicas, b_max, target))


def _for_sla(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    params: Params,
    shape: ReplicaShape,
    plan: _Plan,
    max_replicas: int,
) -> _Plan:
    """`plan` with the fewest replicas whose simulated percentiles at the request rate meet
    the SLA (at least the count the tokens/s and concurrency need), or why none does."""
    probe = shape.layout(hw.gpus_per_node, micro_batch=plan.batch, replicas=plan.replicas)
    replicas, load = replicas_for_sla(workload, arch, hw, probe, params, max_replicas)
    if not load.meets_sla:
        return _Plan(why=f"even {replicas:,} replica(s): " + "; ".join(load.misses))
    return replace(plan, replicas=replicas)


def max_decode_batch(
    workload: InferenceWorkload, hw: Hardware, params: Params, shape: ReplicaShape
) -> int:
    """Sequences one replica of `shape` holds at the mean live context within the TPOT
    target (0 = not even one)."""
    arch = resolve_arch(workload.model)
    return batch_limit(workload, arch, hw, shape.layout(hw.gpus_per_node), params)[0]


def search_inference(workload: InferenceWorkload, scope: SearchScope) -> SearchResult:
    arch, hw, params, limit = scope.arch, scope.hw, scope.params, scope.limit
    every_size = scope.every_size
    gpn = hw.gpus_per_node
    kept = Attempts()
    found, rejections = kept.feasible, kept.rejections
    for shape in replica_shapes(arch, hw, limit):
        if shape.pp > 1 and found:
            break  # a single-node replica exists; pipelining over nodes only costs more
        label = f"{shape.label} on {hw.label or hw.card.id}"
        probe = shape.layout(gpn)
        b_max, bound = batch_limit(workload, arch, hw, probe, params)
        if b_max < 1:
            est = evaluate(workload, hw, probe, params)
            if bound == "tpot":
                rejections.append(f"{label}: " + "; ".join(r for r in est.reasons if "ms" in r))
            kept.near_miss(est)
            continue
        gpus = shape.tp * shape.pp
        per_node = gpn // gpus if gpus <= gpn else 0
        max_replicas = limit * per_node if per_node else limit // math.ceil(gpus / gpn)
        plan = _replicas_and_batch(workload, hw, shape, b_max, max(1, max_replicas))
        if not plan.why and workload.sla is not None:
            plan = _for_sla(workload, arch, hw, params, shape, plan, max(1, max_replicas))
        if plan.why:
            rejections.append(f"{label}: {plan.why}")
            continue
        lay = shape.layout(
            gpn, micro_batch=plan.batch, replicas=plan.replicas, sequences=plan.sequences
        )
        if lay.nodes > limit:
            rejections.append(
                f"{label}: {plan.replicas} replicas need {lay.nodes} nodes, more than the "
                f"{limit} allowed"
            )
            continue
        est = evaluate(workload, hw, lay, params)
        if est.feasible:
            if every_size or not found or est.gpus < min(e.gpus for e in found):
                found.append(est)
        else:
            kept.near_miss(est)
    if workload.disaggregation != "off":
        found, why = _with_disaggregated(workload, arch, hw, params, limit, found)
        rejections += why
    if not found and kept.closest is not None:
        rejections.insert(0, kept.closest_line(hw.label or hw.card.id, with_replicas=True))
    found.sort(key=lambda e: e.gpus)
    return SearchResult(found, rejections)


def _with_disaggregated(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    params: Params,
    limit: int,
    found: list[ConfigEstimate],
) -> tuple[list[ConfigEstimate], list[str]]:
    """`found` plus the disaggregated deployment with the fewest GPUs, each of the two
    cheapest noting why it needs fewer or more GPUs than the other."""
    disagg, why = search_disaggregated(workload, arch, hw, params, limit)
    if disagg is not None and not disagg.feasible:
        why = list(disagg.reasons)  # e.g. percentile targets it cannot show it meets
        disagg = None
    if disagg is None:
        kept = [] if workload.disaggregation == "only" else found
        return kept, [f"{hw.label or hw.card.id}, disaggregated: {w}" for w in why[:2]]
    aggregated = min(found, key=lambda e: (e.gpus, e.nodes), default=None)
    line = compare(aggregated, disagg)
    disagg = _with_comparison(disagg, line)
    if workload.disaggregation == "only":
        return [disagg], []
    out = [_with_comparison(e, line) if e is aggregated else e for e in found]
    return [*out, disagg], []


def _with_comparison(est: ConfigEstimate, line: str) -> ConfigEstimate:
    serving = est.serving
    assert serving is not None
    return replace(est, serving=replace(serving, comparison=line), notes=(*est.notes, line))
