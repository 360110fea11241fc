"""Disaggregated serving: prompts prefilled on one GPU pool, tokens decoded on another.

NVIDIA Dynamo and AIConfigurator, vLLM (`--kv-transfer-config`, disaggregated prefill) and
SGLang (`--disaggregation-mode prefill|decode`) run prefill and decode on separate pools, each
with its own layout, and send each prompt's KV cache from its prefill GPUs to its decode GPUs
(NIXL/Mooncake over RDMA between servers, NVLink inside one). Splitting them removes the
prefill chunks from the decode steps (TPOT no longer carries P/O prompt tokens per sequence)
and lets each pool pick its own TP; it costs the KV transfer, a queue at the prefill pool,
and GPUs that cannot lend spare time to the other phase.

A deployment here (same server type for both pools, the first step the issue allows):
  decode pool   r_d replicas of TP t_d, each decoding b sequences with no prefill in its steps:
                b bounded by memory (each request's KV under the engine's reserve), the
                engine's cap and TPOT(b) ≤ tpot_ms; r_d from the concurrency or the tokens/s
  prefill pool  r_p replicas of TP t_p, each prefilling prompts in full chunks; the request rate
                λ = decode tokens/s ÷ O offers λ·P prompt tokens/s; with Poisson arrivals and a
                fixed prefill time s a replica is an M/D/1 queue, mean wait ρ·s / (2(1 − ρ))
                (Pollaczek-Khinchine). r_p is the fewest replicas whose prefill + wait + KV
                transfer meets ttft_ms, or, without a target, whose mean wait is no longer
                than the prefill itself (ρ ≤ 2/3)
  KV transfer   P × the model's KV bytes per token, from the t_p prefill GPUs in parallel over
                their NIC share to the decode pool's servers (pools on separate servers), or
                over NVLink when both pools fit in one server; NIXL sends it while the next
                prompt prefills, so it adds to TTFT but not to the prefill pool's time per
                prompt unless the NICs are the slower of the two
The search keeps the disaggregated deployment with the fewest GPUs beside the aggregated ones;
the plan's optimiser chooses between them by cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import ConfigEstimate, DisaggPools, Layout, usable_memory_bytes
from gpusolve.estimate.memory import kv_bytes_per_element, kv_cache_bytes, kv_cache_bytes_per_token
from gpusolve.estimate.serving import (
    CHUNK_TOKENS,
    Rates,
    batch_limit,
    evaluate_serving,
    request_shape,
    serving_layout,
    serving_memory,
    serving_params,
)
from gpusolve.estimate.shapes import Arch
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload

# Without a TTFT target a prefill replica runs at most this busy: its mean M/D/1 wait
# ρ/(2(1 − ρ)) prefill times is then at most one prefill time.
UNTARGETED_UTILISATION = 2.0 / 3.0
MAX_PREFILL_REPLICAS = 4096  # search bound only


def kv_transfer(
    workload: InferenceWorkload, arch: Arch, hw: Hardware, prefill_tp: int, one_server: bool
) -> tuple[float, str, float]:
    """(seconds to send one prompt's KV cache, the link, bytes/s the prefill replica can
    send) from a prefill replica of `prefill_tp` GPUs."""
    prompt, _, _ = request_shape(workload)
    kv_b = kv_bytes_per_element(workload.precision, workload.kv_cache_precision)
    size = prompt * kv_cache_bytes_per_token(arch, kv_b)
    if one_server:
        rate = prefill_tp * hw.intra_bus_bytes_per_s(2)
        link = hw.link_name(2, 1)
    else:
        rate = prefill_tp * hw.nic_bytes_per_s()
        link = f"{hw.fabric} fabric"
    if rate <= 0:
        return math.inf, link, 0.0
    return size / rate, link, rate


def _decode_plan(
    workload: InferenceWorkload, rates: Rates, b_max: int
) -> tuple[int, int, float] | None:
    """(replicas, sequences per replica, decode tokens/s of the pool) for the demand."""
    prompt, output, _ = request_shape(workload)

    def tokens(batch: int) -> float:
        return rates.throughput(batch, prompt, output, prefill=False)[0]

    conc, target = workload.concurrency, workload.target_tokens_per_s
    if conc is not None:
        replicas = math.ceil(conc / b_max)
        batch = math.ceil(conc / replicas)
        while target is not None and replicas * tokens(batch) < target:
            if replicas >= conc:
                return None
            replicas += 1
            batch = math.ceil(conc / replicas)
        return replicas, batch, replicas * tokens(batch)
    assert target is not None  # the workload requires a target or a concurrency
    replicas = max(1, math.ceil(target / tokens(b_max)))
    lo, hi = 1, b_max
    while lo < hi:
        mid = (lo + hi) // 2
        if replicas * tokens(mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return replicas, lo, replicas * tokens(lo)


@dataclass(frozen=True)
class _PrefillStage:
    """What a prefill replica of one TP costs per prompt, whatever the request rate: its
    prefill time alone, the KV transfer, and its seconds of service per prompt."""

    alone_s: float
    transfer_s: float
    link: str
    service_s: float
    target_s: float | None


def _prefill_stage(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    params: Params,
    tp: int,
    one_server: bool,
) -> _PrefillStage | None:
    """A prefill replica of TP `tp` (None where it does not fit, cannot send its KV cache
    or misses the TTFT target even with no queue)."""
    prompt, _, _ = request_shape(workload)
    layout = serving_layout(tp, 1, hw.gpus_per_node)
    if not _prefill_fits(workload, arch, hw, layout, params):
        return None
    rates = Rates(workload, arch, hw, layout)
    alone = rates.ttft_s(prompt)
    transfer, link, send_rate = kv_transfer(workload, arch, hw, tp, one_server)
    if not math.isfinite(transfer):
        return None
    kv_b = kv_bytes_per_element(workload.precision, workload.kv_cache_precision)
    kv_bytes = prompt * kv_cache_bytes_per_token(arch, kv_b)
    # Seconds of one replica per prompt: its chunks, or its NICs if they are slower.
    service = max(max(1.0, prompt) / rates.prefill_tokens_per_s(prompt), kv_bytes / send_rate)
    target = workload.ttft_ms / 1000 if workload.ttft_ms is not None else None
    if target is not None and alone + transfer > target:
        return None
    return _PrefillStage(alone, transfer, link, service, target)


def _prefill_replicas(
    stage: _PrefillStage, request_rate: float
) -> tuple[int, float, float, float, float, str] | None:
    """(replicas, utilisation, prefill s, mean wait s, transfer s, link) of the fewest
    replicas of `stage` that meet the TTFT target at `request_rate` requests/s."""
    alone, transfer, service, target = (
        stage.alone_s,
        stage.transfer_s,
        stage.service_s,
        stage.target_s,
    )
    replicas = max(1, math.ceil(request_rate * service))
    while replicas <= MAX_PREFILL_REPLICAS:
        rho = request_rate * service / replicas
        if rho < 1.0:
            wait = rho * service / (2.0 * (1.0 - rho))
            ok = (
                alone + wait + transfer <= target
                if target is not None
                else rho <= UNTARGETED_UTILISATION
            )
            if ok:
                return replicas, rho, alone, wait, transfer, stage.link
        replicas += 1
    return None


def _prefill_fits(
    workload: InferenceWorkload, arch: Arch, hw: Hardware, layout: Layout, params: Params
) -> bool:
    """A prefill replica holds its weights, the engine's profiled activations and the KV of
    the prompts of one chunk until they are sent."""
    card_bytes = hw.card.reported_memory_bytes
    params = serving_params(workload, arch, layout, params, card_bytes)
    prompt, _, _ = request_shape(workload)
    empty = serving_memory(workload, arch, layout, params, 0, card_bytes).total_bytes
    kv_b = kv_bytes_per_element(workload.precision, workload.kv_cache_precision)
    held = max(prompt, CHUNK_TOKENS) * kv_cache_bytes(
        arch, context=1, batch=1, kv_bytes=kv_b, tp=layout.tp, pp=layout.pp
    )
    return empty + held <= usable_memory_bytes(hw.card, params.headroom)


def _tp_choices(arch: Arch, hw: Hardware) -> list[int]:
    gpn = hw.gpus_per_node
    return [t for t in (1, 2, 4, 8, 16) if t <= gpn and gpn % t == 0 and arch.heads % t == 0]


def _nodes(gpus: int, tp: int, gpn: int) -> int:
    return math.ceil(gpus / gpn) if tp <= gpn else gpus // gpn


def search_disaggregated(
    workload: InferenceWorkload, arch: Arch, hw: Hardware, params: Params, limit: int
) -> tuple[ConfigEstimate | None, list[str]]:
    """The disaggregated deployment with the fewest GPUs on `hw` within `limit` servers, or
    None and why not."""
    gpn = hw.gpus_per_node
    _, output, _ = request_shape(workload)
    best: tuple[int, int, ConfigEstimate] | None = None
    why: list[str] = []
    # A prefill replica's figures depend on its TP and where its KV cache goes, not on the
    # decode pool: worked out once per (TP, one server), on first use.
    stages: dict[tuple[int, bool], _PrefillStage | None] = {}

    def stage(t_p: int, one_server: bool) -> _PrefillStage | None:
        if (t_p, one_server) not in stages:
            stages[t_p, one_server] = _prefill_stage(workload, arch, hw, params, t_p, one_server)
        return stages[t_p, one_server]

    for t_d in _tp_choices(arch, hw):
        probe = serving_layout(t_d, 1, gpn)
        b_max, _ = batch_limit(workload, arch, hw, probe, params, prefill=False)
        if b_max < 1:
            why.append(f"decode pool TP{t_d}: no sequence fits the memory and TPOT target")
            continue
        rates = Rates(workload, arch, hw, probe)
        plan = _decode_plan(workload, rates, b_max)
        if plan is None:
            why.append(f"decode pool TP{t_d}: cannot reach the tokens/s target")
            continue
        r_d, batch, decode_tokens = plan
        request_rate = decode_tokens / max(1.0, output)
        decode_gpus = r_d * t_d
        for t_p in _tp_choices(arch, hw):
            found = None
            for one_server in (True, False):
                st = stage(t_p, one_server)
                pool = None if st is None else _prefill_replicas(st, request_rate)
                if pool is None:
                    continue
                gpus = decode_gpus + pool[0] * t_p
                if one_server and gpus > gpn:
                    continue  # both pools in one server only when they fit there
                found = (pool, one_server)
                break
            if found is None:
                continue
            (r_p, rho, alone, wait, transfer, link), one_server = found
            gpus = decode_gpus + r_p * t_p
            nodes = 1 if one_server else _nodes(decode_gpus, t_d, gpn) + _nodes(r_p * t_p, t_p, gpn)
            if nodes > limit or (best is not None and (gpus, nodes) >= best[:2]):
                continue
            pools = DisaggPools(
                prefill_tp=t_p,
                prefill_replicas=r_p,
                decode_tp=t_d,
                decode_replicas=r_d,
                prefill_utilisation=rho,
                kv_transfer_s=transfer,
                link=link,
                prefill_ttft_s=alone,
                queue_s=wait,
                one_server=one_server,
                gpus_per_node=gpn,
            )
            layout = serving_layout(t_d, 1, gpn, micro_batch=batch, replicas=r_d)
            est = evaluate_serving(workload, arch, hw, layout, params, pools)
            est = replace(est, gpus=gpus, nodes=nodes, notes=(*est.notes, describe(pools)))
            best = (gpus, nodes, est)
    if best is None:
        return None, why or ["no prefill pool meets the TTFT target with its KV transfer"]
    return best[2], []


def describe(pools: DisaggPools) -> str:
    """One line saying what the disaggregated deployment is."""
    return (
        f"disaggregated: prefill {pools.prefill_replicas} x TP{pools.prefill_tp} "
        f"({pools.prefill_gpus} GPUs, {pools.prefill_utilisation:.0%} busy, mean wait "
        f"{pools.queue_s * 1000:,.0f} ms) + decode {pools.decode_replicas} x "
        f"TP{pools.decode_tp} ({pools.decode_gpus} GPUs); each prompt's KV cache crosses "
        f"{pools.link} in {pools.kv_transfer_s * 1000:,.1f} ms"
    )


def compare(aggregated: ConfigEstimate | None, disaggregated: ConfigEstimate) -> str:
    """Why one of the two needs fewer GPUs at the same targets, from their own figures."""
    d = disaggregated.serving
    assert d is not None and d.disaggregated is not None
    pools = d.disaggregated
    if aggregated is None or aggregated.serving is None:
        return (
            f"disaggregation is the only way found to meet the targets on this hardware: "
            f"decode steps without prefill chunks reach {d.tpot_s * 1000:,.1f} ms per token"
        )
    a = aggregated.serving
    a_nodes, d_nodes = aggregated.nodes, disaggregated.nodes
    saving = aggregated.gpus - disaggregated.gpus
    servers = f"({a_nodes} -> {d_nodes} servers)"
    if saving > 0:
        verdict = f"disaggregation saves {saving} GPUs {servers}"
    elif saving < 0:
        verdict = f"disaggregation costs {-saving} more GPUs {servers}"
    else:
        verdict = f"disaggregation needs the same {aggregated.gpus} GPUs {servers}"
    return (
        f"{verdict}: aggregated {aggregated.gpus} GPUs decode {a.batch} sequences per TP"
        f"{aggregated.layout.tp} replica at {a.tpot_s * 1000:,.1f} ms per token with prompt "
        f"chunks in the steps ({a.prefill_share:.0%} of step time) and a {a.batch_limit} bound; "
        f"disaggregated decode replicas hold {d.batch} sequences at {d.tpot_s * 1000:,.1f} ms "
        f"without them, plus {pools.prefill_gpus} prefill GPUs {pools.prefill_utilisation:.0%} "
        f"busy and a {pools.kv_transfer_s * 1000:,.1f} ms KV transfer"
    )
