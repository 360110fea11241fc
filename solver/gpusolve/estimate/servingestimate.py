"""A serving layout's estimate: the batch one replica can run (memory, the engine's cap,
the TPOT target) and `evaluate_serving`, which puts the rates of `serving.py` against the
workload's targets, in small steps (layout, latency, demand, bottleneck). The physics and its
sources are in `serving.py`'s docstring."""

from __future__ import annotations

import math

from gpusolve.estimate.checkpoint import inference_checkpoint
from gpusolve.estimate.compute import compute_precision
from gpusolve.estimate.efficiency import efficiency_of
from gpusolve.estimate.engines import release_note
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import (
    ConfigEstimate,
    DisaggPools,
    Layout,
    ServingFigures,
    measured_memory,
    measured_rate_per_gpu,
    pct,
    peak_flops,
    structure_reasons,
    usable_memory_bytes,
)
from gpusolve.estimate.loadsim import LoadFigures
from gpusolve.estimate.memory import weights_bytes
from gpusolve.estimate.moeserve import check_split
from gpusolve.estimate.serving import (
    amount,
    describe_fill,
    max_batch_by_memory,
    pool_tokens_per_s,
    replica_nodes,
    request_shape,
    reserve_policy,
    serving_memory,
    serving_params,
    workload_engine,
)
from gpusolve.estimate.servingload import load_notes, simulate_load
from gpusolve.estimate.servingrates import (
    Rates,
)
from gpusolve.estimate.shapes import Arch
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload


def max_batch_by_latency(
    rates: Rates, workload: InferenceWorkload, limit: int, *, prefill: bool = True
) -> int:
    """The largest batch whose TPOT (decode slowed by interleaved prefill, unless the prompts
    are prefilled elsewhere) meets tpot_ms."""
    if workload.tpot_ms is None or limit < 1:
        return limit
    target = workload.tpot_ms / 1000
    prompt, output, _ = request_shape(workload)

    def tpot(b: int) -> float:
        tokens, _ = rates.throughput(b, prompt, output, prefill=prefill)
        return b / tokens

    if tpot(1) > target:
        return 0
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if tpot(mid) <= target:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _bounded_batch(
    workload: InferenceWorkload,
    arch: Arch,
    layout: Layout,
    rates: Rates,
    usable: float,
    params: Params,
    *,
    prefill: bool = True,
) -> tuple[int, str]:
    by_memory = max_batch_by_memory(workload, arch, layout, usable, params)
    held = min(by_memory, rates.engine_cap)
    by_latency = max_batch_by_latency(rates, workload, held, prefill=prefill)
    if by_latency < held:
        return by_latency, "tpot"
    return held, "memory" if by_memory <= rates.engine_cap else "engine"


def batch_limit(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    layout: Layout,
    params: Params,
    *,
    prefill: bool = True,
) -> tuple[int, str]:
    """(the largest batch one replica can run, what bounds it: memory, the TPOT target or the
    engine's cap); `prefill=False` for a decode pool whose prompts are prefilled elsewhere."""
    params = serving_params(workload, arch, layout, params, hw.card.reported_memory_bytes)
    usable = usable_memory_bytes(hw.card, params.headroom)
    rates = Rates(workload, arch, hw, layout)
    return _bounded_batch(workload, arch, layout, rates, usable, params, prefill=prefill)


# --------------------------------------------------------------------------- evaluate


def comm_note(layout: Layout, comm_fraction: float) -> str:
    """H09's warning, naming the step's exchange: TP all-reduces, or under attention DP the
    MoE layers' dispatch and combine."""
    what = (
        "MoE dispatch and combine (attention data-parallel)"
        if layout.attention_dp
        else "tensor-parallel all-reduces"
    )
    return f"{what} are {pct(comm_fraction)} of a decode step (H09)"


def engine_notes(workload: InferenceWorkload, layout: Layout, params: Params) -> list[str]:
    """What the engine's scheduler and memory reserve assume, for the estimate's notes."""
    engine = workload_engine(workload)
    policy = reserve_policy(workload)
    prompt, output, _ = request_shape(workload)
    held = (
        f"prompt + output ({prompt + output:,.0f} tokens) reserved at admission"
        if policy == "full"
        else f"the live context, {prompt + output / 2:,.0f} tokens on average"
    )
    return [
        release_note(workload.engine),
        f"engine {engine.name}: each running request holds {held} ({policy}); "
        f"{params.headroom:.0%} of the card stays outside its pools (the larger of the plan's "
        f"headroom and the engine's own share; {engine.source})",
    ]


def headroom_warning(workload: InferenceWorkload, tp: int, asked: float, kept: float) -> str:
    """The plan's headroom is below what the engine leaves outside its pools: say what the
    engine will do and what setting would give the plan's figure."""
    engine = workload_engine(workload)
    setting = (
        f"kv_memory_fraction {workload.kv_memory_fraction:g}"
        if workload.kv_memory_fraction is not None
        else f"its default {engine.memory_flag} {engine.fraction(tp):g}"
    )
    return (
        f"warning: the plan's headroom {asked:.0%} is below {engine.name}'s own reserve: with "
        f"{setting} the engine keeps {kept:.0%} of the card outside its pools and sizes the "
        f"KV cache in the rest, so the batch here is what it will admit; to use the card down "
        f"to {asked:.0%} headroom, raise its share ({engine.memory_flag}, kv_memory_fraction)"
    )


def _layout_reasons(
    workload: InferenceWorkload, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> list[str]:
    reasons = structure_reasons(workload, arch, hw, layout, params)
    split = check_split(arch, layout)
    if split:
        reasons.append(split)
    mp = layout.tp * layout.pp
    needed = replica_nodes(layout, hw.gpus_per_node)
    if needed > layout.nodes and not any("GPUs but" in r for r in reasons):
        reasons.append(
            f"{layout.replicas} replica(s) of {mp} GPU(s) need {needed} node(s) of "
            f"{hw.gpus_per_node} GPUs, the layout has {layout.nodes}"
        )
    return reasons


def _latency_reasons(
    workload: InferenceWorkload,
    layout: Layout,
    tpot: float,
    single: float,
    ttft: float,
    limit: int,
    prompt: float,
) -> list[str]:
    """The TPOT and TTFT targets against the layout's figures."""
    out: list[str] = []
    if workload.tpot_ms is not None:
        if 1.0 / single > workload.tpot_ms / 1000:
            out.append(
                f"unattainable on this card: one sequence alone decodes at "
                f"{1000 / single:,.1f} ms per token on TP{layout.tp} PP{layout.pp}, above "
                f"the {workload.tpot_ms:g} ms target (more tensor parallelism, a faster card "
                "or lower precision lowers it; more replicas or stages do not)"
            )
        elif tpot > workload.tpot_ms / 1000:
            out.append(
                f"{layout.micro_batch} sequences per replica decode at {tpot * 1000:,.1f} ms per "
                f"token, above the {workload.tpot_ms:g} ms target (at most {limit} per replica)"
            )
    if workload.ttft_ms is not None and ttft > workload.ttft_ms / 1000:
        out.append(
            f"time to first token {ttft * 1000:,.0f} ms for a {prompt:,.0f}-token prompt is "
            f"above the {workload.ttft_ms:g} ms target (more tensor parallelism shortens it)"
        )
    return out


def _demand(
    workload: InferenceWorkload,
    hw: Hardware,
    layout: Layout,
    rates: Rates,
    prefill: bool,
) -> tuple[float, float | None, list[str], list[str]]:
    """(tokens/s of all replicas, a measured rate per GPU if any, notes, reasons): the pool's
    throughput against the target and its sequences against the concurrency."""
    notes: list[str] = []
    reasons: list[str] = []
    prompt, output, _ = request_shape(workload)
    groups = layout.replica_batches()
    rate = measured_rate_per_gpu(workload, hw.card)
    if rate is not None:
        per_replica = rate * layout.tp * layout.pp
        notes.append(
            f"measured {rate:,.0f} tokens/s per GPU on {hw.card.id} replaces the model (H12)"
        )
        total = per_replica * sum(n for n, b in groups if b > 0)
    else:
        total = pool_tokens_per_s(
            groups, lambda b: rates.throughput(b, prompt, output, prefill=prefill)[0]
        )
    if workload.target_tokens_per_s is not None and total < workload.target_tokens_per_s:
        reasons.append(
            f"{describe_fill(groups)} deliver {total:,.0f} tokens/s, below the target "
            f"{amount(workload.target_tokens_per_s)} tokens/s"
        )
    if workload.concurrency is not None and layout.total_sequences < workload.concurrency:
        reasons.append(
            f"{describe_fill(groups)} hold {layout.total_sequences:,} in all, fewer than the "
            f"{amount(workload.concurrency)} concurrent sequences required"
        )
    if layout.total_sequences < layout.replicas * layout.micro_batch:
        notes.append(
            f"{layout.total_sequences} sequences over {layout.replicas} replica(s): "
            f"{describe_fill(groups)}; each replica's tokens/s at the batch it runs"
        )
    return total, rate, notes, reasons


def _bottleneck(parts: dict[str, float], params: Params) -> tuple[float, str]:
    """(the TP all-reduces' share of a decode step, the step's bound)."""
    stage = sum(parts.values())
    comm_fraction = parts["tp_comm"] / stage if stage > 0 else 0.0
    bound_by = (
        "compute" if parts["compute"] + parts["prefill"] > parts["kv_cache"] else "memory_bandwidth"
    )
    return comm_fraction, "communication" if comm_fraction > params.comm_threshold else bound_by


def _engine_params(
    workload: InferenceWorkload, arch: Arch, layout: Layout, params: Params, card_bytes: float
) -> tuple[Params, list[str]]:
    """The engine's parameters (its headroom when larger than the plan's) and the opening
    notes: the shape's assumptions, how requests were split, what the engine reserves."""
    notes: list[str] = list(arch.assumptions)
    if arch.coarse:
        notes.insert(0, arch.convention)
    _, _, split_note = request_shape(workload)
    if split_note:
        notes.append(split_note)
    asked = params.headroom
    params = serving_params(workload, arch, layout, params, card_bytes)
    notes += engine_notes(workload, layout, params)
    if params.headroom > asked + 1e-9:
        notes.append(headroom_warning(workload, layout.tp, asked, params.headroom))
    return params, notes


def _latencies(
    rates: Rates, batch: int, prompt: float, output: float, pools: DisaggPools | None
) -> tuple[float, float, float, float]:
    """(TPOT at the batch, single-stream tokens/s, TTFT, prefill's share of a step); a
    disaggregated decode pool's TTFT is its prefill pool's, queue and KV transfer included."""
    per_replica, prefill_share = rates.throughput(batch, prompt, output, prefill=pools is None)
    tpot = batch / per_replica if per_replica > 0 else math.inf
    single = 1.0 / rates.tpot_decode_s(1, prefill=False)
    ttft = rates.ttft_s(prompt)
    if pools is not None:
        ttft = pools.prefill_ttft_s + pools.queue_s + pools.kv_transfer_s
    return tpot, single, ttft, prefill_share


def _rate_notes(rates: Rates, hw: Hardware) -> list[str]:
    """Which source the serving GEMM rates come from."""
    rate = rates.decode_rate
    if rate is not None:
        table = rate.table
        return [
            f"decode-shaped GEMM rates: {rate.source.source} ({rate.source.document}), the "
            f"{table.fmt} set of {table.layer_params / 1e6:,.0f}M parameters a layer per GPU, "
            "nearest this layout's"
        ]
    if rates.weight_only_4bit:
        return [
            "no decode-shaped GEMM measurement of 4-bit weights (the measured sets stream 16- "
            "and 8-bit weights): serving GEMMs run at the large-GEMM (training) rate"
        ]
    if rates.weight_only:
        family = efficiency_of(hw.card).family
        return [
            f"{hw.card.id} ({family}) has no tensor cores for these 8-bit weights: they are "
            "served weight-only (W8A16; vLLM runs FP8 checkpoints so through FP8 Marlin), "
            "dequantised into 16-bit GEMMs at the large-GEMM (training) rate and streamed at "
            "the share of the bandwidth gpt-fast's int8 weight-only decode reaches"
        ]
    family = efficiency_of(hw.card).family
    line = (
        f"no decode-shaped GEMM measurement for {family} {rates.fmt}: serving GEMMs run at "
        "the large-GEMM (training) rate"
    )
    return [line + UNMEASURED_FAMILY_CHECKS.get(family, "")]


# What the held-out serving rows say of a family that decodes at the training rate
# (tests/support/validation_cdna.py; benchmarks/README.md).
UNMEASURED_FAMILY_CHECKS = {
    "cdna3": ", which reads 17-45% above AMD's published vLLM throughput on 8 x MI300X "
    "(Llama 3.1 70B and 405B FP8, TP8): treat these tokens/s as an upper bound",
}


def _load(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    layout: Layout,
    params: Params,
    pools: DisaggPools | None,
) -> tuple[LoadFigures | None, list[str], list[str]]:
    """(percentiles at the request rate, notes, reasons): aggregated replicas only."""
    if workload.request_rate is None:
        return None, [], []
    if pools is not None:
        reasons = (
            [
                "percentile targets are simulated for aggregated replicas only, not for "
                "disaggregated pools"
            ]
            if workload.sla is not None
            else []
        )
        return None, ["request-rate percentiles are not simulated for disaggregated pools"], reasons
    load = simulate_load(workload, arch, hw, layout, params)
    return load, load_notes(load), list(load.misses)


def evaluate_serving(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    layout: Layout,
    params: Params,
    pools: DisaggPools | None = None,
) -> ConfigEstimate:
    """One serving layout; with `pools`, `layout` is the decode pool of a disaggregated
    deployment (its prompts prefilled on the prefill pool, their KV sent over), and the
    time to first token is the pools' (disaggregation.py sets GPUs and nodes of both)."""
    card = hw.card
    prefill = pools is None
    mp = layout.tp * layout.pp
    reasons = _layout_reasons(workload, arch, hw, layout, params)
    prompt, output, _ = request_shape(workload)
    card_bytes = card.reported_memory_bytes
    params, notes = _engine_params(workload, arch, layout, params, card_bytes)
    batch = layout.micro_batch
    unmeasured = serving_memory(workload, arch, layout, params, None, card_bytes)
    memory = measured_memory(workload, hw, mp * layout.replicas, unmeasured, notes)
    peak = peak_flops(card, compute_precision("inference", workload.precision), reasons)
    rates = Rates(workload, arch, hw, layout)
    notes += _rate_notes(rates, hw)
    tpot, single, ttft, prefill_share = _latencies(rates, batch, prompt, output, pools)
    usable = usable_memory_bytes(card, params.headroom)
    limit, bound = _bounded_batch(workload, arch, layout, rates, usable, params, prefill=prefill)
    reasons += _latency_reasons(workload, layout, tpot, single, ttft, limit, prompt)
    total, rate, demand_notes, demand_reasons = _demand(workload, hw, layout, rates, prefill)
    load, load_said, load_reasons = _load(workload, arch, hw, layout, params, pools)
    notes += demand_notes + load_said
    reasons += demand_reasons + load_reasons
    parts = rates.decode_stage_s(batch, prefill=prefill)
    comm_fraction, bottleneck = _bottleneck(parts, params)
    if memory.kv_cache_bytes > memory.weights_bytes:
        notes.append("the KV cache outweighs the weights: context × concurrency sets the card")
    if comm_fraction > params.comm_threshold:
        notes.append(comm_note(layout, comm_fraction))
    per_token = 2.0 * arch.active_params
    bytes_moved = rates.weights_gpu + batch / layout.pp * rates.context * rates.kv_token_gpu
    figures = ServingFigures(
        batch=batch,
        max_batch=limit,
        mean_context=rates.context,
        tpot_s=tpot,
        ttft_s=ttft,
        single_stream_tokens_per_s=single,
        prefill_share=prefill_share,
        decode_step={k: layout.pp * v for k, v in parts.items()},
        batch_limit=bound,
        disaggregated=pools,
        engine=workload_engine(workload).name,
        reserve=reserve_policy(workload),
        sequences=layout.total_sequences,
        replica_batches=tuple(layout.replica_batches()),
        load=load,
    )
    return ConfigEstimate.build(
        workload,
        arch,
        hw,
        layout,
        params,
        memory=memory,
        flops=per_token,
        model_flops=per_token,
        step_time_s=tpot,
        tokens_per_s=total,
        comm_fraction=comm_fraction,
        serving=figures,
        checkpoint=inference_checkpoint(weights_bytes=weights_bytes(arch, workload.precision)),
        bottleneck=bottleneck,
        arithmetic_intensity=(
            per_token * batch / layout.pp / mp / bytes_moved if bytes_moved else math.inf
        ),
        ridge_point=peak / (card.memory_bandwidth_gbs * 1e9),
        reasons=reasons,
        notes=notes,
        measured=rate is not None,
    )
