"""Disaggregated serving: prompts prefilled on one GPU pool, tokens decoded on another.

NVIDIA Dynamo and AIConfigurator, vLLM (`--kv-transfer-config`, disaggregated prefill) and
SGLang (`--disaggregation-mode prefill|decode`) run prefill and decode on separate pools, each
with its own layout, and send each prompt's KV cache from its prefill GPUs to its decode GPUs
(NIXL/Mooncake over RDMA between servers, NVLink inside one). Splitting them removes the
prefill chunks from the decode steps (TPOT no longer carries P/O prompt tokens per sequence)
and lets each pool pick its own TP; it costs the KV transfer, a queue at the prefill pool,
and GPUs that cannot lend spare time to the other phase.

A deployment here (same server type for both pools):
  replicas      each pool's replica is TP 1, 2, 4 or 8 inside a server, or a server's TP
                pipelined over 2, 4, ... servers (as aggregated replicas are; a model larger
                than a server, DeepSeek-V3 on H800, needs them), so a pool is one or more
                servers; an explicit layout is taken as the decode pool as given
  decode pool   r_d replicas, each decoding b sequences with no prefill in its steps:
                b bounded by memory (each request's KV under the engine's reserve), the
                engine's cap and TPOT(b) ≤ tpot_ms; r_d from the concurrency (held exactly,
                the last replica partly filled) or the tokens/s, never more than the allowed
                servers hold
  prefill pool  r_p replicas of one shape, each prefilling prompts in full chunks; the request rate
                λ = decode tokens/s ÷ O offers λ·P prompt tokens/s; with Poisson arrivals and a
                fixed prefill time s a replica is an M/D/1 queue, mean wait ρ·s / (2(1 − ρ))
                (Pollaczek-Khinchine). r_p is the fewest replicas whose prefill + wait + KV
                transfer meets ttft_ms, or, without a target, whose mean wait is no longer
                than the prefill itself (ρ ≤ 2/3)
  KV transfer   P × the model's KV bytes per token, from the prefill replica's GPUs (each its
                heads and layers) in parallel over their NIC share to the decode pool's
                servers (pools on separate servers), or over NVLink when both pools fit in
                one server; NIXL sends it while the next
                prompt prefills, so it adds to TTFT but not to the prefill pool's time per
                prompt unless the NICs are the slower of the two
The search keeps the disaggregated deployment with the fewest GPUs beside the aggregated ones;
the plan's optimiser chooses between them by cost.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from gpusolve.estimate.activations import (
    kv_bytes_per_element,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
)
from gpusolve.estimate.disaggtext import describe as describe
from gpusolve.estimate.disaggtext import pool_label
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import ConfigEstimate, DisaggPools, Layout, usable_memory_bytes
from gpusolve.estimate.moeserve import split_of
from gpusolve.estimate.replicas import ReplicaShape, replica_shapes
from gpusolve.estimate.serving import (
    CHUNK_TOKENS,
    amount,
    fill_replicas,
    pool_tokens_per_s,
    request_shape,
    serving_memory,
    serving_params,
)
from gpusolve.estimate.servingestimate import batch_limit, evaluate_serving
from gpusolve.estimate.servingrates import (
    Rates,
)
from gpusolve.estimate.shapes import Arch
from gpusolve.models.params import Params
from gpusolve.models.requirements import InferenceWorkload

# Without a TTFT target a prefill replica runs at most this busy: its mean M/D/1 wait
# ρ/(2(1 − ρ)) prefill times is then at most one prefill time.
UNTARGETED_UTILISATION = 2.0 / 3.0


def kv_transfer(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    prefill_tp: int,
    one_server: bool,
    prefill_pp: int = 1,
) -> tuple[float, str, float]:
    """(seconds to send one prompt's KV cache, the link, bytes/s the prefill replica can
    send) from a prefill replica of `prefill_tp` × `prefill_pp` GPUs: each GPU sends the KV of
    its own heads and layers, all of them at once."""
    prompt, _, _ = request_shape(workload)
    kv_b = kv_bytes_per_element(workload.precision, workload.kv_cache_precision)
    size = prompt * kv_cache_bytes_per_token(arch, kv_b)
    senders = prefill_tp * prefill_pp
    if one_server:
        rate = senders * hw.intra_bus_bytes_per_s(2)
        link = hw.link_name(2, 1)
    else:
        rate = senders * hw.nic_bytes_per_s()
        link = f"{hw.fabric} fabric"
    if rate <= 0:
        return math.inf, link, 0.0
    return size / rate, link, rate


@dataclass(frozen=True)
class _DecodePlan:
    """Decode replicas for the demand: `batch` on each full one, `sequences` over all of them
    (the last one partly filled), the pool's decode tokens/s; or why none."""

    replicas: int = 0
    batch: int = 0
    sequences: int | None = None
    tokens_per_s: float = 0.0
    why: str = ""


def _decode_plan(
    workload: InferenceWorkload, rates: Rates, b_max: int, max_replicas: int
) -> _DecodePlan:
    """The fewest decode replicas (at most `max_replicas`, what the allowed servers hold) that
    hold the concurrency and deliver the tokens/s, each timed at the batch it runs."""
    prompt, output, _ = request_shape(workload)

    def tokens(batch: int) -> float:
        return rates.throughput(batch, prompt, output, prefill=False)[0]

    conc, target = workload.concurrency, workload.target_tokens_per_s
    too_many = f"more than the {max_replicas:,} the allowed servers hold"
    if conc is not None:

        def fill(r: int) -> _DecodePlan:
            replicas, batch = fill_replicas(conc, math.ceil(conc / r))
            full, rest = divmod(conc, batch)
            total = pool_tokens_per_s(((full, batch), (1 if rest else 0, rest)), tokens)
            return _DecodePlan(replicas, batch, conc, total)

        r_lo = math.ceil(conc / b_max)
        if r_lo > max_replicas:
            return _DecodePlan(
                why=f"{amount(conc)} sequences need {amount(r_lo)} replicas, {too_many}"
            )
        r_hi = max(r_lo, min(conc, max_replicas))
        if target is not None and fill(r_hi).tokens_per_s < target:
            return _DecodePlan(why=f"cannot reach {amount(target)} tokens/s on {r_hi:,} replicas")
        lo, hi = r_lo, r_hi
        while target is not None and lo < hi:
            mid = (lo + hi) // 2
            if fill(mid).tokens_per_s >= target:
                hi = mid
            else:
                lo = mid + 1
        return fill(lo)
    assert target is not None  # the workload requires a target or a concurrency
    needed = target / tokens(b_max)
    if needed > max_replicas:
        return _DecodePlan(
            why=f"{amount(target)} tokens/s need {amount(needed)} replicas, {too_many}"
        )
    replicas = max(1, math.ceil(needed))
    lo, hi = 1, b_max
    while lo < hi:
        mid = (lo + hi) // 2
        if replicas * tokens(mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return _DecodePlan(replicas, lo, None, replicas * tokens(lo))


Shape = ReplicaShape


@dataclass(frozen=True)
class _PrefillStage:
    """What a prefill replica of one shape costs per prompt, whatever the request rate: its
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
    shape: Shape,
    one_server: bool,
) -> _PrefillStage | None:
    """A prefill replica of `shape` (None where it does not fit, cannot send its KV cache
    or misses the TTFT target even with no queue)."""
    tp, pp = shape.split
    prompt, _, _ = request_shape(workload)
    layout = shape.layout(hw.gpus_per_node)
    if not _prefill_fits(workload, arch, hw, layout, params):
        return None
    rates = Rates(workload, arch, hw, layout)
    alone = rates.ttft_s(prompt)
    transfer, link, send_rate = kv_transfer(workload, arch, hw, tp, one_server, pp)
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
    stage: _PrefillStage, request_rate: float, max_replicas: int
) -> tuple[int, float, float, float, float, str] | None:
    """(replicas, utilisation, prefill s, mean wait s, transfer s, link) of the fewest
    replicas of `stage`, at most `max_replicas`, that meet the TTFT target at `request_rate`
    requests/s. The M/D/1 wait falls as replicas are added, so the fewest is bisected."""
    alone, transfer, service, target = (
        stage.alone_s,
        stage.transfer_s,
        stage.service_s,
        stage.target_s,
    )
    offered = request_rate * service  # replicas kept busy, on average
    if not math.isfinite(offered) or offered >= max_replicas:
        return None

    def wait(replicas: int) -> float | None:
        rho = offered / replicas
        if rho >= 1.0:
            return None
        w = rho * service / (2.0 * (1.0 - rho))
        ok = alone + w + transfer <= target if target is not None else rho <= UNTARGETED_UTILISATION
        return w if ok else None

    lo, hi = max(1, math.ceil(offered)), max_replicas
    if wait(hi) is None:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if wait(mid) is None:
            lo = mid + 1
        else:
            hi = mid
    w = wait(lo)
    assert w is not None
    return lo, offered / lo, alone, w, transfer, stage.link


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
        arch, context=1, batch=1, kv_bytes=kv_b, tp=split_of(layout).attention_ranks, pp=layout.pp
    )
    return empty + held <= usable_memory_bytes(hw.card, params.headroom)


def _replica_servers(shape: Shape, gpn: int) -> int:
    """Servers one replica of `shape` spans (0 when several replicas share one)."""
    gpus = shape.tp * shape.pp
    return math.ceil(gpus / gpn) if gpus > gpn else 0


def _pool_servers(shape: Shape, replicas: int, gpn: int) -> int:
    span = _replica_servers(shape, gpn)
    if span:
        return replicas * span
    return math.ceil(replicas / (gpn // (shape.tp * shape.pp)))


def _max_replicas(shape: Shape, gpn: int, servers: int) -> int:
    span = _replica_servers(shape, gpn)
    return servers // span if span else servers * (gpn // (shape.tp * shape.pp))


def _decode_pools(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    params: Params,
    shapes: list[Shape],
    limit: int,
    why: list[str],
) -> list[tuple[Shape, _DecodePlan]]:
    """Each decode shape that meets the demand within `limit` servers, with its plan; a shape
    spanning servers only when no single-server one does (it adds the stage hops)."""
    gpn = hw.gpus_per_node
    out: list[tuple[Shape, _DecodePlan]] = []
    for shape in shapes:
        if shape.pp > 1 and out:
            break
        probe = shape.layout(gpn)
        b_max, _ = batch_limit(workload, arch, hw, probe, params, prefill=False)
        if b_max < 1:
            why.append(
                f"decode pool {pool_label(shape)}: no sequence fits the memory and TPOT target"
            )
            continue
        rates = Rates(workload, arch, hw, probe)
        plan = _decode_plan(workload, rates, b_max, max(1, _max_replicas(shape, gpn, limit)))
        if plan.why:
            why.append(f"decode pool {pool_label(shape)}: {plan.why}")
            continue
        out.append((shape, plan))
    return out


def _fixed_decoder(
    workload: InferenceWorkload, arch: Arch, hw: Hardware, decode: Layout
) -> tuple[Shape, _DecodePlan]:
    """An explicit decode layout as the decode pool, its tokens/s at the batches it runs."""
    rates = Rates(workload, arch, hw, decode)
    prompt, output, _ = request_shape(workload)
    tokens = pool_tokens_per_s(
        decode.replica_batches(),
        lambda b: rates.throughput(b, prompt, output, prefill=False)[0],
    )
    plan = _DecodePlan(decode.replicas, decode.micro_batch, decode.sequences, tokens)
    return ReplicaShape(decode.tp, decode.pp, decode.ep, decode.attention_dp), plan


def _prefill_pool(
    stage: Callable[[Shape, bool], _PrefillStage | None],
    p_shape: Shape,
    decode_gpus: int,
    decode_servers: int,
    prefill_servers: int,
    request_rate: float,
    gpn: int,
) -> tuple[tuple[int, float, float, float, float, str], bool] | None:
    """The fewest prefill replicas of `p_shape` for the request rate, in the decode pool's
    server when both pools fit there, else on servers of their own; None when none serves."""
    for one_server in (True, False):
        if one_server and (decode_servers > 1 or _replica_servers(p_shape, gpn)):
            continue  # both pools in one server only when both fit there
        room = gpn - decode_gpus if one_server else prefill_servers * gpn
        cap = room // (p_shape.tp * p_shape.pp)
        if not one_server:
            cap = _max_replicas(p_shape, gpn, prefill_servers)
        st = stage(p_shape, one_server)
        pool = None if st is None or cap < 1 else _prefill_replicas(st, request_rate, cap)
        if pool is not None:
            return pool, one_server
    return None


def _pools(
    found: tuple[tuple[int, float, float, float, float, str], bool],
    p_shape: Shape,
    d_shape: Shape,
    decode_replicas: int,
    decode_servers: int,
    gpn: int,
) -> DisaggPools:
    """The two pools of a deployment: the prefill pool found for the decode pool's rate."""
    (r_p, rho, alone, wait, transfer, link), one_server = found
    return DisaggPools(
        prefill_tp=p_shape.tp,
        prefill_replicas=r_p,
        decode_tp=d_shape.tp,
        decode_replicas=decode_replicas,
        prefill_utilisation=rho,
        kv_transfer_s=transfer,
        link=link,
        prefill_ttft_s=alone,
        queue_s=wait,
        one_server=one_server,
        gpus_per_node=gpn,
        prefill_pp=p_shape.pp,
        decode_pp=d_shape.pp,
        prefill_nodes=0 if one_server else _pool_servers(p_shape, r_p, gpn),
        decode_nodes=1 if one_server else decode_servers,
        prefill_ep=p_shape.ep,
        decode_ep=d_shape.ep,
        prefill_attention_dp=p_shape.attention_dp,
        decode_attention_dp=d_shape.attention_dp,
    )


def search_disaggregated(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    params: Params,
    limit: int,
    decode: Layout | None = None,
) -> tuple[ConfigEstimate | None, list[str]]:
    """The disaggregated deployment with the fewest GPUs on `hw` within `limit` servers, or
    None and why not. Each pool is one or more replicas, a replica one server or part of one
    or several servers pipelined; `decode` fixes the decode pool (an explicit layout), and
    only the prefill pool is searched."""
    gpn = hw.gpus_per_node
    _, output, _ = request_shape(workload)
    best: tuple[int, int, ConfigEstimate] | None = None
    why: list[str] = []
    shapes = replica_shapes(arch, hw, limit)
    # A prefill replica's figures depend on its shape and where its KV cache goes, not on the
    # decode pool: worked out once per (shape, one server), on first use.
    stages: dict[tuple[Shape, bool], _PrefillStage | None] = {}

    def stage(shape: Shape, one_server: bool) -> _PrefillStage | None:
        if (shape, one_server) not in stages:
            stages[shape, one_server] = _prefill_stage(
                workload, arch, hw, params, shape, one_server
            )
        return stages[shape, one_server]

    if decode is not None:
        decoders = [_fixed_decoder(workload, arch, hw, decode)]
    else:
        decoders = _decode_pools(workload, arch, hw, params, shapes, limit, why)
    for d_shape, plan in decoders:
        request_rate = plan.tokens_per_s / max(1.0, output)
        decode_gpus = plan.replicas * d_shape.tp * d_shape.pp
        decode_servers = _pool_servers(d_shape, plan.replicas, gpn)
        for p_shape in shapes:
            found = _prefill_pool(
                stage,
                p_shape,
                decode_gpus,
                decode_servers,
                limit - decode_servers,
                request_rate,
                gpn,
            )
            if found is None:
                continue
            (r_p, *_), one_server = found
            gpus = decode_gpus + r_p * p_shape.tp * p_shape.pp
            nodes = 1 if one_server else decode_servers + _pool_servers(p_shape, r_p, gpn)
            if nodes > limit or (best is not None and (gpus, nodes) >= best[:2]):
                continue
            pools = _pools(found, p_shape, d_shape, plan.replicas, decode_servers, gpn)
            layout = d_shape.layout(
                gpn, micro_batch=plan.batch, replicas=plan.replicas, sequences=plan.sequences
            )
            est = evaluate_serving(workload, arch, hw, layout, params, pools)
            est = replace(est, gpus=gpus, nodes=nodes, notes=(*est.notes, describe(pools)))
            best = (gpus, nodes, est)
    if best is None:
        return None, why or ["no prefill pool meets the TTFT target with its KV transfer"]
    return best[2], []


def explicit_disaggregated(
    workload: InferenceWorkload,
    arch: Arch,
    hw: Hardware,
    params: Params,
    limit: int,
    layout: Layout,
    micro_batch: int | None,
) -> tuple[ConfigEstimate | None, list[str]]:
    """A layout the user gave, taken as the decode pool of a disaggregated deployment (its
    replicas, TP and PP as given, over as many servers as they need), the prefill pool
    searched beside it within the servers left: the layout is kept, never replaced. Without a
    stated batch, each decode replica runs what it admits without prompt chunks in its steps,
    the concurrency filled in turn."""
    shape = ReplicaShape(layout.tp, layout.pp, layout.ep, layout.attention_dp)
    if micro_batch is None:
        probe = shape.layout(hw.gpus_per_node)
        b_max = max(1, batch_limit(workload, arch, hw, probe, params, prefill=False)[0])
        conc = workload.concurrency
        micro_batch = b_max if conc is None else min(b_max, math.ceil(conc / layout.replicas))
    decode = shape.layout(
        hw.gpus_per_node,
        micro_batch=micro_batch,
        replicas=layout.replicas,
        sequences=workload.concurrency,
    )
    return search_disaggregated(workload, arch, hw, params, limit, decode=decode)
