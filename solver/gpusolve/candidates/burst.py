"""Mixed capacity: part of a workload's work on owned servers, the rest on a rented burst.

A service's replicas are independent copies behind its load balancer, so its demand can
be split between platforms: servers the team owns or buys carry a share s of it, a rental
carries the rest. Each part is sized by this stage's own layout search at its share of the
demand (`InferenceWorkload.demand_scaled`: tokens/s, users and request rate together), so
each meets the latency targets at the batch its own replicas run, and the two together
hold at least the whole demand (users round up on each side). A training workload's runs
are independent too: owned servers may run k of its runs and a rental the others, each
run on one platform within the deadline (a run is not cut between data centres: its
ranks synchronise every step); that pays where the servers cannot fit every run within
the horizon, or where their delivery leaves too little of it.

The bases are owned options like any other (`OwnedOption.share_permille`); the rentals
sized for the rest are kept apart (`Instance.bursts`): a burst is never chosen alone.
Each base is paired with the cheapest burst for the rest that breaks no requirement
(`with_bursts`), and the optimiser chooses the pair as one option: its servers, racks and
energy as an owned option's, the burst's rent and penalties on top. Day and night
sharing is the base's own slot.

The shares tried are half the demand (half the runs, in whole runs), and for each server
model the team already owns, the share its stock serves with whole replicas (r of the R
replicas the whole demand takes on that model carry at least r/R of it, the last replica
being the partly filled one), so "the servers we own at base load, a rental for the peak"
is always a candidate. Each share sizes every candidate again and adds options to every
period of a schedule: quarters doubled the shipped schedule's time (9.3 s unsplit, 11.0 s
with halves, 22.4 s with quarters) for 2.5% more saving than halves (benchmarks/README).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gpusolve.candidates.builder import Builder
from gpusolve.candidates.options import cloud_options, owned_options
from gpusolve.models.requirements import InferenceWorkload, Workload
from gpusolve.optimize import ir

# The base's shares of the demand tried besides the stock's own (see the module docstring).
SHARES_PERMILLE = (500,)


def splittable(w: Workload) -> bool:
    """A service sized by its traffic, or a training workload of two runs or more."""
    if not w.split:
        return False
    return isinstance(w, InferenceWorkload) or w.runs >= 2


@dataclass(frozen=True)
class Split:
    """One way to split a workload: the base's share of the work (permille, for pairing)
    and its exact fraction, and the workload each part is sized for."""

    share_permille: int
    fraction: float
    base: Workload
    rest: Workload


def mixed_options(b: Builder, w: Workload) -> None:
    """Add `w`'s bases (owned options at a share of its work) to `b.owned`, and the
    rentals sized for the rest to `b.bursts`, for every split worth trying."""
    if not splittable(w):
        return
    for split in splits(b, w):
        sub = b.part()
        cloud_options(sub, split.rest)
        if not any(not c.violates for c in sub.cloud):
            continue  # no rental carries the rest: no base at this share
        owned_options(sub, split.base)
        share, rest = split.share_permille, 1000 - split.share_permille
        for o in sub.owned:
            key = f"{o.key}|base{share / 10:g}%"
            b.owned.append(dataclasses.replace(o, key=key, share_permille=share))
            b.meta[key] = dataclasses.replace(sub.meta[o.key], key=key, share=split.fraction)
        for c in sub.cloud:
            key = f"{c.key}|burst{rest / 10:g}%"
            b.bursts.append(dataclasses.replace(c, key=key, share_permille=rest))
            meta = dataclasses.replace(sub.meta[c.key], key=key, share=1 - split.fraction)
            b.meta[key] = meta


def splits(b: Builder, w: Workload) -> list[Split]:
    """A service at each share of `shares`; a training workload at half its runs in
    whole runs (k of them on the base, the rest rented)."""
    if isinstance(w, InferenceWorkload):
        return [
            Split(
                s,
                s / 1000,
                w.model_copy(update=w.demand_scaled(s / 1000)),
                w.model_copy(update=w.demand_scaled(1 - s / 1000)),
            )
            for s in shares(b, w)
        ]
    whole = math.floor(w.runs)
    ks = sorted({k for q in SHARES_PERMILLE if 1 <= (k := whole * q // 1000) < w.runs})
    return [
        Split(
            round(1000 * k / w.runs),
            k / w.runs,
            w.model_copy(update={"runs": float(k)}),
            w.model_copy(update={"runs": w.runs - k}),
        )
        for k in ks
    ]


def shares(b: Builder, w: InferenceWorkload) -> list[int]:
    """Half, and what each owned server model's stock serves with whole replicas (of
    the whole-demand options already built for `w`), in permille, ascending."""
    out = set(SHARES_PERMILLE)
    stock: dict[str, int] = defaultdict(int)
    for held in b.reqs.owned.servers:
        stock[held.server] += held.count
    for o in b.owned:
        if o.workload != w.name or o.share_permille != 1000 or o.sku not in stock:
            continue
        share = stock_share(b, o, stock[o.sku])
        if share is not None:
            out.add(share)
    return sorted(out)


def stock_share(b: Builder, option: ir.OwnedOption, held: int) -> int | None:
    """The share of the demand `held` servers carry with whole replicas of `option`'s
    layout (permille, rounded down), where they hold at least one and fewer than all."""
    estimate = b.meta[option.key].estimate
    serving = estimate.serving
    replicas = estimate.layout.replicas
    if serving is None or serving.disaggregated is not None or replicas < 2:
        return None
    gpus_per_server = b.catalog.servers[option.sku].gpus
    gpus_per_replica = estimate.gpus // replicas
    whole = min(replicas - 1, held * gpus_per_server // max(1, gpus_per_replica))
    if whole < 1:
        return None
    return 1000 * whole // replicas


def with_bursts(instance: ir.Instance) -> ir.Instance:
    """The instance with each base paired with the cheapest burst for the rest of its
    workload's demand (price plus penalty, then key) that breaks no requirement; a base
    with none is dropped. Every stage that changes an instance's rentals calls it again
    (the sensitivity analysis)."""
    cheapest = _cheapest_bursts(instance.bursts)
    owned: list[ir.OwnedOption] = []
    for o in instance.owned:
        if o.share_permille == 1000:
            owned.append(o)
            continue
        burst = cheapest.get((o.workload, 1000 - o.share_permille))
        if burst is None:
            continue
        base_throughput = o.throughput - (o.burst.throughput if o.burst is not None else 0)
        owned.append(
            dataclasses.replace(o, burst=burst, throughput=base_throughput + burst.throughput)
        )
    return dataclasses.replace(instance, owned=tuple(owned))


def _cheapest_bursts(
    bursts: Iterable[ir.CloudOption],
) -> dict[tuple[str, int], ir.CloudOption]:
    out: dict[tuple[str, int], ir.CloudOption] = {}
    for c in bursts:
        if c.violates:
            continue
        key = (c.workload, c.share_permille)
        best = out.get(key)
        if best is None or (c.cost_total + c.penalty, c.key) < (
            best.cost_total + best.penalty,
            best.key,
        ):
            out[key] = c
    return out
