"""The `gpusolve estimate` report: every workload on every card, as the typed output model.

Pure: catalogue, requirements and per-workload parameters in, `EstimateReport` out. Each
workload carries its own parameters (the rules' headroom and framework settings), so the
report says the headroom it sized with, per workload.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from gpusolve.estimate import (
    Arch,
    ConfigEstimate,
    Hardware,
    Layout,
    evaluate,
    resolve_arch,
    search_layouts,
    thumb_figures,
    whole_model_memory,
)
from gpusolve.estimate.disaggregation import explicit_disaggregated
from gpusolve.estimate.goodput import goodput_out
from gpusolve.estimate.layout import DisaggPools
from gpusolve.estimate.loadsim import LoadFigures
from gpusolve.estimate.replicas import ReplicaShape
from gpusolve.estimate.searchserve import max_decode_batch
from gpusolve.estimate.stageparams import mtp_params
from gpusolve.estimate.trainshape import mtp_depth_of
from gpusolve.estimate.units import GB, SECONDS_PER_HOUR
from gpusolve.models.catalog import Card, Catalog
from gpusolve.models.common import out_from
from gpusolve.models.estimate import (
    ArchOut,
    ConfigOut,
    DisaggOut,
    EstimateReport,
    LoadOut,
    MemoryGB,
    ServingOut,
    StageOut,
    StepOut,
    ThumbOut,
    WorkloadEstimate,
)
from gpusolve.models.params import Params
from gpusolve.models.requirements import (
    DEFAULT_OPTIMIZER,
    InferenceWorkload,
    Requirements,
    Workload,
)

ZERO_SHARDING = {0: "ddp", 1: "zero1", 2: "zero2", 3: "zero3"}


class LayoutError(ValueError):
    """A command-line layout that cannot be built (the message says which option)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


@dataclass(frozen=True)
class LayoutChoice:
    """What the command line fixes of a layout; None leaves it to the workload."""

    gpus: int | None = None
    tp: int | None = None
    pp: int | None = None
    zero: int | None = None
    sharding: str | None = None
    vp: int | None = None
    cp: int | None = None
    ep: int | None = None
    attention_dp: bool | None = None  # serving an MoE model (moeserve.py)
    sequence_parallel: bool | None = None
    micro_batch: int | None = None
    recompute: str | None = None

    @property
    def explicit(self) -> bool:
        return any(v is not None for v in vars(self).values())


def hardware_for(catalog: Catalog, card: Card) -> Hardware:
    """The node a card is sized in: the catalogue server with the most of these cards (then
    the fastest peer link), else the largest cloud instance, else 8 generic cards."""
    servers = [s for s in catalog.servers.values() if s.card == card.id]
    if servers:
        best = max(servers, key=lambda s: (s.gpus, s.peer_bandwidth_gbs, s.fabric.total_gbps))
        return Hardware.from_server(best, card)
    offers = [o for o in catalog.cloud_offers.values() if o.card == card.id]
    if offers:
        offer = max(offers, key=lambda o: (o.gpus_per_instance, o.peer_bandwidth_gbs))
        return Hardware.from_cloud(offer, card)
    return Hardware.generic(card)


def explicit_layout(w: Workload, hw: Hardware, params: Params, choice: LayoutChoice) -> Layout:
    """The one layout the command line describes; unset parts come from the workload."""
    t, p, c = choice.tp or 1, choice.pp or 1, choice.cp or 1
    total = choice.gpus or t * p * c
    if total % (t * p * c):
        raise LayoutError(
            "--gpus", f"--gpus {total} is not a multiple of TP × CP × PP = {t * p * c}"
        )
    dp = total // (t * p * c)
    if isinstance(w, InferenceWorkload):
        adp = bool(choice.attention_dp)
        shape = ReplicaShape(t, p, choice.ep or (t if adp else 1), adp)
        b_max = max(1, max_decode_batch(w, hw, params, shape))
        batch = choice.micro_batch or (
            b_max if w.concurrency is None else min(b_max, math.ceil(w.concurrency / dp))
        )
        return shape.layout(
            hw.gpus_per_node, micro_batch=batch, replicas=dp, sequences=w.concurrency
        )
    if choice.attention_dp:
        raise LayoutError("--attention-dp", "--attention-dp describes how a service is served")
    sharding = choice.sharding or (
        ZERO_SHARDING[choice.zero] if choice.zero is not None else (w.sharding or "ddp")
    )
    mb = choice.micro_batch or w.micro_batch
    accum = math.ceil(w.global_batch / (dp * mb)) if w.global_batch else 1
    return Layout(
        nodes=math.ceil(total / hw.gpus_per_node),
        tp=t,
        pp=p,
        dp=dp,
        sharding=sharding,
        checkpointing=choice.recompute or w.gradient_checkpointing or "none",
        micro_batch=mb,
        grad_accum=max(1, accum),
        ep=choice.ep or 1,
        sequence_parallel=True if choice.sequence_parallel is None else choice.sequence_parallel,
        vp=choice.vp or 1,
        cp=c,
    )


def _explicit_pools(
    w: InferenceWorkload, hw: Hardware, params: Params, choice: LayoutChoice, est: ConfigEstimate
) -> ConfigEstimate:
    """`disaggregation: only` with a layout given: the layout is the decode pool and the
    prefill pool is sized beside it; where none fits, the aggregated figures stay, with the
    reason the pools could not be formed (the layout is never swapped for another)."""
    arch = resolve_arch(w.model)
    pooled, why = explicit_disaggregated(
        w, arch, hw, params, params.max_nodes, est.layout, choice.micro_batch
    )
    if pooled is not None:
        return pooled
    reason = (
        f"disaggregation: only, with {est.layout.describe(True)} as the decode pool: "
        + "; ".join(why[:2])
    )
    return replace(est, reasons=(*est.reasons, reason))


def build_report(
    reqs: Requirements,
    catalog: Catalog,
    cards: list[Card],
    per_workload: Mapping[str, Params],
    choice: LayoutChoice,
) -> EstimateReport:
    """The report for every workload on every card, each workload with its own parameters."""
    workloads: list[WorkloadEstimate] = []
    for w in reqs.workloads:
        params = per_workload[w.name]
        arch = resolve_arch(w.model)
        configs: list[ConfigOut] = []
        rejections: list[str] = []
        fits_on: list[str] = []
        for card in cards:
            hw = hardware_for(catalog, card)
            if choice.explicit:
                est = evaluate(w, hw, explicit_layout(w, hw, params, choice), params)
                if isinstance(w, InferenceWorkload) and w.disaggregation == "only":
                    est = _explicit_pools(w, hw, params, choice, est)
                configs.append(config_out(est))
                if est.feasible:
                    fits_on.append(card.id)
                continue
            result = search_layouts(w, hw, params, max_nodes=params.max_nodes, whole_nodes=False)
            if not result.feasible:
                rejections += [f"{card.id}: {r}" for r in result.rejections[:2]] or [
                    f"{card.id}: no layout fits"
                ]
                continue
            fits_on.append(card.id)
            chosen = [result.feasible[0]]
            if isinstance(w, InferenceWorkload):
                chosen = _both_serving_modes(result.feasible)
            if w.deadline_hours is not None and not chosen[0].meets_deadline:
                meeting = [e for e in result.feasible if e.meets_deadline]
                if meeting:
                    chosen.append(meeting[0])
                else:
                    rejections += [f"{card.id}: {r}" for r in result.rejections if "deadline" in r]
            configs += [config_out(e) for e in chosen]
        workloads.append(
            WorkloadEstimate(
                name=w.name,
                kind=w.kind,
                headroom=params.headroom,
                precision=w.precision,
                optimizer=DEFAULT_OPTIMIZER if isinstance(w, InferenceWorkload) else w.optimizer,
                tokens=None if isinstance(w, InferenceWorkload) else w.tokens,
                deadline_h=w.deadline_hours,
                arch=arch_out(arch, trained_mtp_depth(w, arch)),
                thumb=thumb_out(arch, w, params),
                fits_on=fits_on,
                configs=configs,
                rejections=rejections,
            )
        )
    return EstimateReport(mode="explicit" if choice.explicit else "search", workloads=workloads)


def _both_serving_modes(feasible: list[ConfigEstimate]) -> list[ConfigEstimate]:
    """The fewest-GPU aggregated layout and the fewest-GPU disaggregated one, where found."""
    out = []
    for pooled in (False, True):
        mode = [
            e for e in feasible if e.serving and (e.serving.disaggregated is not None) == pooled
        ]
        if mode:
            out.append(min(mode, key=lambda e: (e.gpus, e.nodes)))
    return out


def _pooled(e: ConfigEstimate) -> bool:
    return e.serving is not None and e.serving.disaggregated is not None


def trained_mtp_depth(w: Workload, arch: Arch) -> int:
    """The multi-token prediction modules this workload trains (none when serving)."""
    return 0 if isinstance(w, InferenceWorkload) else mtp_depth_of(w, arch)


def arch_out(arch: Arch, mtp_depth: int = 0) -> ArchOut:
    """`mtp_depth`: the multi-token prediction modules the workload trains beside the head."""
    return out_from(
        ArchOut,
        arch,
        preset=arch.name,
        params_b=arch.params / 1e9,
        active_params_b=arch.active_params / 1e9,
        mtp_depth=mtp_depth,
        mtp_params_b=mtp_depth * sum(mtp_params(arch)) / 1e9,
        derivation=arch.convention,
        assumptions=list(arch.assumptions),
    )


def thumb_out(arch: Arch, w: Workload, params: Params) -> ThumbOut:
    # The rules of thumb take the size as the user states it (params_b), else the shape's.
    params_b = w.model.params_b if w.model.params_b is not None else arch.params / 1e9
    t = thumb_figures(params_b, w.kind, params)
    whole = whole_model_memory(w, params)
    return ThumbOut(
        h30_class=t.h30_class,
        h30_factor=t.h30_factor,
        h30_range=t.h30_range,
        h30_gb=t.h30_bytes / GB,
        h05_low_gb=None if t.h05_low_bytes is None else t.h05_low_bytes / GB,
        h05_high_gb=None if t.h05_high_bytes is None else t.h05_high_bytes / GB,
        formula_whole_model_gb=whole.total_bytes / GB,
        formula_model_states_gb=(
            whole.weights_bytes + whole.gradients_bytes + whole.optimizer_bytes
        )
        / GB,
    )


def _step_out(e: ConfigEstimate) -> StepOut | None:
    # StepOut names a subset of StepBreakdown's fields and properties, so read them by name.
    return None if e.step is None else StepOut.model_validate(e.step, from_attributes=True)


def _serving_out(e: ConfigEstimate) -> ServingOut | None:
    v = e.serving
    if v is None:
        return None
    return out_from(
        ServingOut,
        v,
        tpot_ms=v.tpot_s * 1000,
        ttft_ms=v.ttft_s * 1000,
        decode_step_ms={k: x * 1000 for k, x in v.decode_step.items()},
        disaggregated=_disagg_out(v.disaggregated),
        replica_batches=list(v.replica_batches),
        load=_load_out(v.load),
    )


def _finite_ms(seconds: float) -> float | None:
    return seconds * 1000 if math.isfinite(seconds) else None


def _load_out(load: LoadFigures | None) -> LoadOut | None:
    if load is None:
        return None
    return out_from(
        LoadOut,
        load,
        ttft_ms=[_finite_ms(x) for x in load.ttft_s],
        tpot_ms=[_finite_ms(x) for x in load.tpot_s],
    )


def _disagg_out(p: DisaggPools | None) -> DisaggOut | None:
    if p is None:
        return None
    return out_from(DisaggOut, p, queue_ms=p.queue_s * 1000, kv_transfer_ms=p.kv_transfer_s * 1000)


# The layout figures ConfigOut states under the layout's own names.
_LAYOUT_FIELDS = (
    "tp",
    "pp",
    "dp",
    "vp",
    "cp",
    "ep",
    "attention_dp",
    "replicas",
    "zero_stage",
    "sharding",
    "micro_batch",
    "grad_accum",
)


def config_out(e: ConfigEstimate) -> ConfigOut:
    lay = e.layout
    return out_from(
        ConfigOut,
        e,
        **{name: getattr(lay, name) for name in _LAYOUT_FIELDS},
        sequence_parallel=lay.sequence_parallel_on,
        gradient_checkpointing=lay.checkpointing,
        memory_per_gpu_gb=MemoryGB(**e.memory.as_gb()),
        card_memory_gb=e.card_memory_bytes / GB,
        usable_memory_gb=e.usable_memory_bytes / GB,
        steady_time_h=None if e.goodput is None else e.goodput.steady_s / SECONDS_PER_HOUR,
        goodput=goodput_out(e.goodput, e.gpus),
        stages=[out_from(StageOut, st, memory_gb=MemoryGB(**st.memory.as_gb())) for st in e.stages],
        step=_step_out(e),
        serving=_serving_out(e),
        checkpoint_gb=e.checkpoint_bytes / GB,
        checkpoint_weights_gb=e.checkpoint_weights_bytes / GB,
    )
