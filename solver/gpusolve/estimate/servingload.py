"""A serving layout under its request rate: TTFT and TPOT percentiles and goodput from the
scheduler simulation of `loadsim.py`, driven by the per-step time model of `serving.py` and
the KV capacity of its memory model, and the fewest replicas whose percentiles meet the
workload's SLA.

What is simulated: one replica receiving `request_rate / replicas` (the service's arrivals
split evenly at random), `loadsim.DEFAULT_REQUESTS` requests, seeded (`loadsim.DEFAULT_SEED`);
the replica's scheduler as its engine runs it (`engines.py`: vLLM's and TensorRT-LLM's mixed
steps, SGLang's separate prefill steps; the engine's token budget and running-request cap;
TensorRT-LLM's whole-request reservation). Goodput is vLLM's `benchmark_serving.py --goodput`
definition: requests whose own TTFT and TPOT are within every stated target, per second of
the run. A replica that completes under 90% of its arrivals over the run's second half is
saturated: its queue grows as long as requests come, so it misses every target whatever its
finite sample's percentiles read. Disaggregated pools are not simulated (their percentiles are
not estimated, and a percentile SLA rules them out).
"""

from __future__ import annotations

import math
from functools import lru_cache

from gpusolve.estimate import memo
from gpusolve.estimate.draws import SplitMix64, arrivals, from_histogram, lognormal, percentiles
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import Layout, usable_memory_bytes
from gpusolve.estimate.loadsim import (
    DEFAULT_REQUESTS,
    DEFAULT_SEED,
    LoadFigures,
    Requests,
    Scheduler,
    StepCost,
    simulate,
)
from gpusolve.estimate.serving import (
    request_shape,
    reserve_policy,
    serving_memory,
    serving_params,
    workload_engine,
)
from gpusolve.estimate.servingrates import (
    DECODE_KERNELS_PER_LAYER,
    GRAPH_KERNEL_GAP_S,
    PAGED_ATTENTION_SLOWDOWN,
    Rates,
)
from gpusolve.estimate.shapes import Arch
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload, LengthDistribution

QUANTILES = (50, 90, 99)
# Completions below this share of the arrivals (over the run's second half) are saturation,
# not the sampling noise of about 500 Poisson arrivals (±4.5%).
SATURATED = 0.9


def _lengths(rng: SplitMix64, mean: float, spread: LengthDistribution | None, n: int) -> list[int]:
    if spread is None:
        return [max(1, round(mean))] * n
    if spread.histogram is not None:
        return from_histogram(rng, spread.histogram, n)
    return lognormal(rng, mean, float(spread.stdev or 0.0), n)


def draw_requests(
    workload: InferenceWorkload, rate: float, n: int = DEFAULT_REQUESTS, seed: int = DEFAULT_SEED
) -> Requests:
    """The requests one replica receives at `rate` per second: arrivals, then prompt and
    output lengths, from one seeded generator."""
    rng = SplitMix64(seed)
    prompt, output, _ = request_shape(workload)
    times = arrivals(rng, rate, n, workload.arrivals == "poisson")
    prompts = _lengths(rng, prompt, workload.prompt_lengths, n)
    outputs = _lengths(rng, output, workload.output_lengths, n)
    return Requests(arrival_s=times, prompt=prompts, output=outputs)


def step_cost(rates: Rates) -> StepCost:
    """`serving.py`'s step time as a function of the step's rows, the KV its decodes read and
    its prompt attention (one stage's kernels; `StepCost` puts the stages together)."""
    gaps = rates.stage_layers * DECODE_KERNELS_PER_LAYER * GRAPH_KERNEL_GAP_S

    @lru_cache(maxsize=16384)
    def stage_s(rows: int) -> float:
        micro = max(1.0, float(rows))
        stream, math_s = rates.gemm_parts(micro)
        return max(stream, math_s) + rates.tp_comm_s(micro) + rates.elementwise_s(micro) + gaps

    return StepCost(
        stage_s=stage_s,
        kv_s=rates.kv_token_gpu * PAGED_ATTENTION_SLOWDOWN / rates.bandwidth,
        attention_s=rates.prompt_attention_s(1.0, 1.0),
        stages=rates.pp,
        hop_s=(rates.pp - 1) * rates.pp_latency,
    )


def scheduler_for(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    layout: Layout,
    params: Params,
    rates: Rates,
) -> Scheduler:
    """The engine's limits on one replica: its token budget and running cap, and the KV
    cache that the memory model leaves (the card's usable memory less weights, profiled
    activations and runtime overhead), in tokens."""
    engine = workload_engine(workload)
    card_bytes = hw.card.reported_memory_bytes
    kept = serving_params(workload, arch, layout, params, card_bytes)
    usable = usable_memory_bytes(hw.card, kept.headroom)
    empty = serving_memory(workload, arch, layout, kept, 0, card_bytes).total_bytes
    kv_tokens = int(max(0.0, usable - empty) // rates.kv_token_gpu) if rates.kv_token_gpu else 0
    return Scheduler(
        token_budget=engine.token_budget(card_bytes, hw.card.id),
        max_running=engine.batch_cap(card_bytes, hw.card.id),
        kv_tokens=kv_tokens,
        mixed=engine.mixed_prefill,
        reserve_full=reserve_policy(workload) == "full",
    )


def _good(workload: InferenceWorkload, ttft: list[float], tpot: list[float]) -> int:
    """Requests within every stated target (a single-token request has no TPOT to miss)."""
    assert workload.sla is not None
    targets = workload.sla.targets()

    def within(first: float, per_token: float) -> bool:
        if not math.isfinite(first):
            return False
        for metric, _, ms in targets:
            value = first if metric == "ttft" else per_token
            if not math.isnan(value) and value > ms / 1000:
                return False
        return True

    return sum(1 for a, b in zip(ttft, tpot, strict=True) if within(a, b))


def _misses(
    workload: InferenceWorkload,
    ttft: tuple[float, ...],
    tpot: tuple[float, ...],
    replicas: int,
    steady_rps: float,
) -> tuple[str, ...]:
    """The SLA's targets the percentiles miss; a saturated service misses them all, however
    its sample's percentiles read (its queue, and TTFT, grow while requests arrive)."""
    if workload.sla is None:
        return ()
    rate = float(workload.request_rate or 0.0)
    if steady_rps < SATURATED * rate:
        return (
            f"{replicas} replica(s) complete {steady_rps:,.2f} requests/s of the {rate:g} "
            "arriving (simulated): the queue and TTFT grow without bound",
        )
    out = []
    for metric, q, ms in workload.sla.targets():
        got = (ttft if metric == "ttft" else tpot)[QUANTILES.index(q)] * 1000
        if not got <= ms:
            out.append(
                f"{metric.upper()} P{q} {_ms(got)} at {workload.request_rate:g} requests/s over "
                f"{replicas} replica(s) (simulated) is above the {ms:g} ms target"
            )
    return tuple(out)


def _ms(x: float) -> str:
    return "inf ms" if not math.isfinite(x) else f"{x:,.0f} ms" if x >= 100 else f"{x:,.1f} ms"


_RUNS: memo.Cache = {}
_RUNS_MAX = 1024


def simulate_load(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    layout: Layout,
    params: Params,
    replicas: int | None = None,
) -> LoadFigures:
    """The layout's replicas at the workload's request rate (`replicas` overrides the
    layout's count, for the SLA search). Memoised per (workload, hardware, TP, PP, replicas,
    parameters) for the searches, by the workload's identity (`memo.py`: workloads hold
    lists, unhashable)."""
    count = max(1, replicas if replicas is not None else layout.replicas)
    key = (id(workload), hw, layout.tp, layout.pp, count, params)
    try:
        found: LoadFigures | None = memo.cached(_RUNS, key, workload)
    except TypeError:  # parameters holding a mapping: not memoised
        return _simulate_load(workload, arch, hw, layout, params, count)
    if found is not None:
        return found
    load = _simulate_load(workload, arch, hw, layout, params, count)
    return memo.keep(_RUNS, key, workload, load, _RUNS_MAX)


def _simulate_load(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    layout: Layout,
    params: Params,
    count: int,
) -> LoadFigures:
    assert workload.request_rate is not None
    rate = workload.request_rate / count
    rates = Rates(workload, arch, hw, layout)
    sched = scheduler_for(workload, arch, hw, layout, params, rates)
    result = simulate(draw_requests(workload, rate), sched, step_cost(rates))
    ttft = percentiles(result.ttft_s, QUANTILES)
    tpot = percentiles(result.tpot_s, QUANTILES)
    done = len(result.ttft_s) - result.refused
    per_replica = done / result.duration_s if result.duration_s > 0 else 0.0
    goodput = None
    if workload.sla is not None and result.duration_s > 0:
        good = _good(workload, result.ttft_s, result.tpot_s)
        goodput = count * good / result.duration_s
    return LoadFigures(
        request_rate=workload.request_rate,
        replicas=count,
        requests=len(result.ttft_s),
        arrivals=workload.arrivals,
        ttft_s=(ttft[0], ttft[1], ttft[2]),
        tpot_s=(tpot[0], tpot[1], tpot[2]),
        throughput_rps=count * per_replica,
        steady_rps=count * result.steady_rps,
        goodput_rps=goodput,
        mean_running=result.mean_running,
        preemptions=result.preemptions,
        refused=result.refused,
        kv_tokens=sched.kv_tokens,
        misses=_misses(workload, ttft, tpot, count, count * result.steady_rps),
    )


def load_summary(load: LoadFigures) -> str:
    """The simulated percentiles and goodput in one line, for a plan's deployment."""
    ttft = "/".join(_ms(x * 1000).removesuffix(" ms") for x in load.ttft_s)
    tpot = "/".join(_ms(x * 1000).removesuffix(" ms") for x in load.tpot_s)
    line = (
        f"at {load.request_rate:g} requests/s over {load.replicas} replica(s) (simulated): "
        f"TTFT P50/P90/P99 {ttft} ms, TPOT P50/P90/P99 {tpot} ms"
    )
    if load.goodput_rps is not None:
        verdict = "SLA met" if load.meets_sla else "SLA missed"
        line += f", goodput {load.goodput_rps:,.2f} requests/s ({verdict})"
    return line


def load_notes(load: LoadFigures) -> list[str]:
    """What the simulation assumed and saw, for the estimate's notes."""
    notes = [
        f"request rate {load.request_rate:g}/s ({load.arrivals}) over {load.replicas} "
        f"replica(s): {load.requests:,} requests simulated per replica (seeded; continuous "
        f"batching on a KV cache of {load.kv_tokens:,} tokens), {load.mean_running:,.1f} "
        "running on average"
    ]
    if load.preemptions:
        notes.append(f"the KV cache ran full: {load.preemptions:,} preemption(s) (recomputed)")
    if load.refused:
        notes.append(f"{load.refused:,} request(s) refused: the prompt alone exceeds the cache")
    if load.saturated:
        notes.append(
            f"saturated: requests complete at {load.steady_rps:,.2f}/s, below the "
            f"{load.request_rate:g}/s arriving (the queue grows while requests arrive)"
        )
    return notes


def replicas_for_sla(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    layout: Layout,
    params: Params,
    most: int,
) -> tuple[int, LoadFigures]:
    """The fewest replicas of the layout's shape, from its own count up to `most`, whose
    simulated percentiles meet the SLA (percentiles only improve as the rate per replica
    falls, so the count is bisected between one that misses and one that meets); when even
    `most` misses, (`most`, its figures) with the misses."""
    low = max(1, layout.replicas)
    first = simulate_load(workload, arch, hw, layout, params, low)
    if first.meets_sla or low >= most:
        return low, first
    top = simulate_load(workload, arch, hw, layout, params, most)
    if not top.meets_sla:
        return most, top
    high, best = most, top
    while high - low > 1:
        mid = (low + high) // 2
        load = simulate_load(workload, arch, hw, layout, params, mid)
        if load.meets_sla:
            high, best = mid, load
        else:
            low = mid
    return high, best
