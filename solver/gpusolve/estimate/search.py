"""Search parallel layouts for one workload on one hardware type: `search_layouts`.

Training: for each GPU count (whole nodes 1, 2, 3, 4, 6, 8, 12, 16, ... — powers of two
and 1.5× powers of two — up to `max_nodes`, one node when the hardware has no inter-node
fabric; with `whole_nodes=False` also 1, 2, 4 ... GPUs of one node) find the fastest
feasible layout. Model-parallel splits tp × cp × pp are tried from small to large (TP inside
a node, TP ∈ {1, 2, 4, 8} dividing the heads; CP ∈ {1, 2, 4, 8} for sequences of 16k tokens
and more; DP must split a given global batch exactly); for each, every recomputation level
gets the *least* sharding, then the least expert parallelism (inside or across nodes), that
fits (more of either only adds communication), then the largest micro-batch that fits; with
pipeline stages the interleaved schedule (2 and 4 virtual stages) is tried too. Dominance
prunes the rest: the climb ends at a split where the plainest layout (no recomputation, DDP
or ZeRO-1) is feasible (larger splits only add communication), skips splits whose lower
bound on time (their GEMM FLOPs at the card's achievable rate and the least bubble) cannot
beat the best found, and stops after six feasible splits in a row without improvement.

GPU counts: the search stops at the first count whose best layout meets the deadline
(`workload.deadline_hours`, one run) — without a deadline that is the first feasible
count, or a count no faster than the one before; between the last count that misses
the deadline and the first that meets it, up to eight evenly spaced counts are bisected, so
a 21-day run lands near the node count it needs rather than a 1.5× step above it. When even
`max_nodes` misses the deadline only powers of two are sampled. Layouts that miss the
deadline are returned with `meets_deadline=False` so the caller can explain "deadline too
short", with a sentence in `rejections`. With `every_size` (the planner's candidates) the
search goes on past the first count that meets the deadline, through each larger count on
the grid while it is faster; the bisected count is kept as well as the grid count above it.

Inference: for TP = 1, 2, 4, 8 (then PP across nodes if one node is too small) a replica
decodes as many sequences as memory (the KV cache at the mean live context) and the TPOT
target allow. A stated `concurrency` is held exactly: the replicas are filled in turn, the
last one partly (64 on replicas of at most 10 is 6 × 10 + 4), and the fewest replicas whose
batches, each timed at the batch it runs, deliver `target_tokens_per_s` are bisected; without
a concurrency, replicas are added until the target is met, at the smallest per-replica batch
that still meets it (lower latency). No more replicas are tried than the allowed nodes hold,
so a demand no layout meets ends with a reason, however large it grows. A larger TP is kept
only if it needs fewer GPUs in total.

For every GPU count with no feasible layout the closest attempt's reasons are kept in
`rejections`, so "why not this card" always has an answer with numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpusolve.estimate.calibration import calibration_for
from gpusolve.estimate.compute import compute_precision, weight_flops_per_token
from gpusolve.estimate.disaggregation import compare, search_disaggregated
from gpusolve.estimate.efficiency import efficiency_of, gemm_shape_factor, mamf_fraction
from gpusolve.estimate.evaluation import evaluate
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import ConfigEstimate, Layout, overhead_bytes, usable_memory_bytes
from gpusolve.estimate.serving import (
    amount,
    batch_limit,
    fill_replicas,
    pool_tokens_per_s,
    replica_tokens_per_s,
    serving_layout,
)
from gpusolve.estimate.shapes import Arch, resolve_arch
from gpusolve.estimate.trainshape import stage_memory_for
from gpusolve.estimate.units import SECONDS_PER_HOUR
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, Training, Workload

MICRO_BATCHES = (1, 2, 4, 8, 16, 32, 64)
TP_CHOICES = (1, 2, 4, 8)
CP_CHOICES = (1, 2, 4, 8)
LONG_SEQUENCE = 16384  # context parallelism is searched from this sequence length on
VIRTUAL_STAGES = (2, 4)
BUBBLE_WORTH = 0.03  # interleaving is tried when the bubble exceeds this share of the step
PATIENCE = 6  # feasible (tp, cp, pp) splits without improvement before a GPU count is settled
REFINE_COUNTS = 8  # node counts bisected between a miss and a hit of the deadline


@dataclass(frozen=True)
class SearchResult:
    """Feasible, non-dominated layouts (ascending GPUs) and why the others were rejected."""

    feasible: list[ConfigEstimate] = field(default_factory=list)
    rejections: list[str] = field(default_factory=list)

    @property
    def best(self) -> ConfigEstimate | None:
        """Training: the fewest GPUs meeting the deadline, else the fastest.
        Inference: the fewest GPUs."""
        if not self.feasible:
            return None
        meeting = [e for e in self.feasible if e.meets_deadline]
        if meeting:
            return min(meeting, key=lambda e: (e.gpus, e.time_to_train_s or 0.0))
        return min(self.feasible, key=lambda e: (e.time_to_train_s or math.inf, e.gpus))


def node_counts(max_nodes: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, 16, 24, ... up to max_nodes (and max_nodes itself)."""
    out: set[int] = set()
    p = 1
    while p <= max_nodes:
        out.add(p)
        if p * 3 // 2 <= max_nodes and p >= 2:
            out.add(p * 3 // 2)
        p *= 2
    if max_nodes >= 1:
        out.add(max_nodes)
    return sorted(out)


def search_layouts(
    workload: Workload,
    hw: Hardware,
    params: Params,
    *,
    max_nodes: int,
    whole_nodes: bool = True,
    every_size: bool = False,
) -> SearchResult:
    """Feasible layouts of `workload` on `hw` using 1..max_nodes nodes (capped by
    `params.max_nodes`, and by one node when `params.allow_multi_node` is false).
    `whole_nodes=False` also tries fractions of one node (1, 2, 4 ... GPUs): the smallest
    configuration, as `gpusolve estimate` shows it.

    `every_size=True` does not stop at the first size that meets the deadline: training
    goes on through the larger node counts while each is faster than the one before (a
    rental can cost less on more instances for fewer hours, and a larger owned layout has
    more headroom or throughput), and inference keeps every replica shape that fits, not
    only those that need fewer GPUs. The planner's candidates use it, so "optimal" covers
    every size the search can tell apart, not only the smallest one."""
    limit = min(max_nodes, params.max_nodes)
    if not params.allow_multi_node:
        limit = min(limit, 1)
    if limit < 1:
        return SearchResult([], ["no nodes allowed (max_nodes < 1)"])
    arch = resolve_arch(workload.model)
    if isinstance(workload, InferenceWorkload):
        return _search_inference(workload, arch, hw, params, limit, whole_nodes, every_size)
    return _search_training(workload, arch, hw, params, limit, whole_nodes, every_size)


# ---------------------------------------------------------------- training


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


def _closeness(e: ConfigEstimate) -> tuple[float, ...]:
    """Order infeasible attempts: memory overshoot first, then everything else."""
    usable = e.usable_memory_bytes
    over = e.memory.total_bytes / usable if usable > 0 else math.inf
    return (
        0.0 if e.fits else 1.0,
        over if not e.fits else 0.0,
        len(e.reasons),
        e.comm_fraction + e.checkpoint_stall_fraction,
    )


def _faster(a: ConfigEstimate, b: ConfigEstimate | None) -> bool:
    if b is None:
        return True
    ta, tb = a.time_to_train_s or math.inf, b.time_to_train_s or math.inf
    return ta < tb


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
    closest: ConfigEstimate | None = None
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
                    if _faster(est, best):
                        best, improved = est, True
                    if ckpt == "none" and lay.zero_stage <= 1:
                        plain_mp = mp
                elif closest is None or _closeness(est) < _closeness(closest):
                    closest = est
        if improved:
            stale = 0
        elif seen_feasible:
            stale += 1
    if best is None and closest is None and splits:
        # Nothing fits in memory: report the leanest layout's shortfall.
        tp, cp, pp = max(splits, key=lambda x: (x[0] * x[1] * x[2], x[0]))
        dp = gpus // (tp * cp * pp)
        sharding = _shardings(workload, nodes)[-1]
        ckpt = _checkpointings(workload)[-1]
        mb = micro_batches[0]
        accum = _accum(workload, dp, mb, pp) or max(1, (workload.global_batch or dp) // dp)
        eps = _expert_degrees(arch, dp)
        lay = Layout(nodes, tp, pp, dp, sharding, ckpt, mb, accum, ep=eps[-1], cp=cp)
        closest = evaluate(workload, hw, lay, params)
    return best, closest


def _where(hw: Hardware, gpus: int, nodes: int) -> str:
    label = hw.label or hw.card.id
    if nodes == 1 and gpus < hw.gpus_per_node:
        return f"{gpus} GPU(s) of one {label}"
    return f"{nodes} × {label} ({gpus} GPUs)"


def _refine(lo: int, hi: int) -> list[int]:
    """Up to REFINE_COUNTS node counts strictly between lo and hi, evenly spaced."""
    gap = hi - lo
    if gap <= 1:
        return []
    step = max(1, math.ceil(gap / (REFINE_COUNTS + 1)))
    return list(range(lo + step, hi, step))


def _search_training(
    workload: Training,
    arch: Arch,
    hw: Hardware,
    params: Params,
    limit: int,
    whole_nodes: bool,
    every_size: bool = False,
) -> SearchResult:
    feasible: list[ConfigEstimate] = []
    rejections: list[str] = []
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
                rejections.append(
                    f"{_where(hw, gpus, nodes)}, closest layout "
                    f"{closest.layout.describe()}: {'; '.join(closest.reasons)}"
                )
            elif workload.global_batch is not None:
                rejections.append(
                    f"{_where(hw, gpus, nodes)}: no split of the global batch of "
                    f"{workload.global_batch} sequences over the data-parallel ranks fits"
                )
            continue
        if best_so_far is not None and not _faster(best, best_so_far):
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
    return SearchResult(feasible, rejections)


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


# ---------------------------------------------------------------- inference


def _tokens_per_s(
    workload: InferenceWorkload, hw: Hardware, params: Params, tp: int, pp: int, batch: int
) -> float:
    """Generated tokens/s of one replica decoding `batch` sequences (the same figure
    `evaluate` reports, without building the whole estimate)."""
    return replica_tokens_per_s(workload, hw, tp, pp, batch)


def _smallest_batch(
    workload: InferenceWorkload,
    hw: Hardware,
    params: Params,
    tp: int,
    pp: int,
    replicas: int,
    b_max: int,
    target: float,
) -> int:
    lo, hi = 1, b_max
    while lo < hi:
        mid = (lo + hi) // 2
        if replicas * _tokens_per_s(workload, hw, params, tp, pp, mid) >= target:
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
    params: Params,
    tp: int,
    pp: int,
    b_max: int,
    max_replicas: int,
) -> _Plan:
    """The fewest replicas of tp × pp that hold the concurrency and deliver the tokens/s,
    each replica timed at the batch it really runs; never more than `max_replicas` (what the
    allowed nodes hold), so a demand no layout meets ends the search with a reason."""
    target = workload.target_tokens_per_s
    conc = workload.concurrency

    def tokens(batch: int) -> float:
        return _tokens_per_s(workload, hw, params, tp, pp, batch)

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
            groups = serving_layout(
                tp, pp, hw.gpus_per_node, micro_batch=batch, replicas=replicas, sequences=conc
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
    return _Plan(replicas, _smallest_batch(workload, hw, params, tp, pp, replicas, b_max, target))


def max_decode_batch(
    workload: InferenceWorkload, hw: Hardware, params: Params, tp: int, pp: int
) -> int:
    """Sequences one replica of tp × pp GPUs holds at the mean live context within the TPOT
    target (0 = not even one)."""
    arch = resolve_arch(workload.model)
    return batch_limit(workload, arch, hw, serving_layout(tp, pp, hw.gpus_per_node), params)[0]


def _search_inference(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    params: Params,
    limit: int,
    whole_nodes: bool,
    every_size: bool = False,
) -> SearchResult:
    gpn = hw.gpus_per_node
    shapes: list[tuple[int, int]] = [
        (tp, 1) for tp in TP_CHOICES if tp <= gpn and gpn % tp == 0 and arch.heads % tp == 0
    ]
    top_tp = shapes[-1][0] if shapes else 1
    # A replica larger than a node pipelines over the fabric: only with one (replicas of
    # one node each need none, they are independent).
    span_limit = limit if hw.inter_node_gbps_per_gpu > 0 else 1
    pp = 2
    while pp <= min(gpn * span_limit, arch.layers) and top_tp * pp <= gpn * span_limit:
        shapes.append((top_tp, pp))
        pp *= 2
    found: list[ConfigEstimate] = []
    rejections: list[str] = []
    closest: ConfigEstimate | None = None
    for tp, pp in shapes:
        if pp > 1 and found:
            break  # a single-node replica exists; spanning nodes only costs more
        probe = serving_layout(tp, pp, gpn)
        b_max, bound = batch_limit(workload, arch, hw, probe, params)
        if b_max < 1:
            est = evaluate(workload, hw, probe, params)
            if bound == "tpot":
                rejections.append(
                    f"TP{tp} PP{pp} on {hw.label or hw.card.id}: "
                    + "; ".join(r for r in est.reasons if "ms" in r)
                )
            if closest is None or _closeness(est) < _closeness(closest):
                closest = est
            continue
        per_node = gpn // (tp * pp) if tp * pp <= gpn else 0
        max_replicas = limit * per_node if per_node else limit // math.ceil(tp * pp / gpn)
        plan = _replicas_and_batch(workload, hw, params, tp, pp, b_max, max(1, max_replicas))
        if plan.why:
            rejections.append(f"TP{tp} PP{pp} on {hw.label or hw.card.id}: {plan.why}")
            continue
        lay = serving_layout(
            tp, pp, gpn, micro_batch=plan.batch, replicas=plan.replicas, sequences=plan.sequences
        )
        if lay.nodes > limit:
            rejections.append(
                f"TP{tp} PP{pp} on {hw.label or hw.card.id}: {plan.replicas} replicas need "
                f"{lay.nodes} nodes, more than the {limit} allowed"
            )
            continue
        est = evaluate(workload, hw, lay, params)
        if est.feasible:
            if every_size or not found or est.gpus < min(e.gpus for e in found):
                found.append(est)
        elif closest is None or _closeness(est) < _closeness(closest):
            closest = est
    if workload.disaggregation != "off":
        found, why = _with_disaggregated(workload, arch, hw, params, limit, found)
        rejections += why
    if not found and closest is not None:
        rejections.insert(
            0,
            f"{hw.label or hw.card.id}, closest layout {closest.layout.describe(True)}: "
            f"{'; '.join(closest.reasons)}",
        )
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
