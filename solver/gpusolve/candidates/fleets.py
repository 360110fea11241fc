"""Serving fleets at full load, for the max-throughput objective.

A service sized for its target runs each replica at the batch that just meets the target;
what the same hardware can serve is more: every replica at the largest batch its memory
and the latency targets allow (`ServingFigures.max_batch`). Under max-throughput the plan
is to buy or rent the most tokens/s within the budget, so each candidate (a server model
or a cloud offer) is also offered as fleets of m servers or instances whose replicas all
run full, for m from the smallest that meets the target up to the most the budget could
buy at that candidate's price. Each fleet is sized by the layout search itself at the
concurrency it holds full (m x replicas per server x the largest batch), with the rules
applied as to any option, so its figures are the estimate's own at that load.

The sizes tried: every count up to eight above the smallest, then steps of a quarter, and
the largest affordable count, so that the plan's tokens/s is never below the best single
candidate the budget affords. Only aggregated replicas that fit one server or instance
are scaled (replicas are independent copies behind a load balancer, so m servers hold m
times one server's replicas); a disaggregated service or a replica across servers keeps
its target-sized options. A request rate is not simulated at full load: the largest batch
within the TPOT target is the SLA the fleet is held to.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpusolve.candidates.builder import Builder
from gpusolve.candidates.pricing import rental, vat_factors
from gpusolve.candidates.sizing import Sized, size_layouts
from gpusolve.estimate import ConfigEstimate, Hardware
from gpusolve.models.catalog import Card, CloudOffer, Server
from gpusolve.models.requirements import InferenceWorkload, Workload

# Counts above the smallest tried one by one; beyond them, steps of a quarter.
ONE_BY_ONE = 8
STEP = 1.25


def full_fleets(
    b: Builder,
    w: Workload,
    card: Card,
    kind: str,
    subject: Server | CloudOffer,
    hw: Hardware,
    limit: int,
    sized: Sequence[Sized],
) -> list[Sized]:
    """`subject`'s fleets at full load for `w` (empty unless the objective is
    max-throughput and `w` a service with a replica that fits one server)."""
    if b.reqs.objective != "max-throughput" or not isinstance(w, InferenceWorkload):
        return []
    base = _scalable(sized, hw.gpus_per_node)
    if base is None or base.serving is None:
        return []
    unit_cost = _unit_cost(b, w, subject, base)
    per_node = hw.gpus_per_node // (base.layout.tp * base.layout.pp)
    batch = base.serving.max_batch
    out: list[Sized] = []
    for nodes in counts(base.nodes, min(limit, affordable(b, kind, unit_cost))):
        full = w.model_copy(
            update={
                "concurrency": nodes * per_node * batch,
                "target_tokens_per_s": None,
                "request_rate": None,
                "sla": None,
            }
        )
        part = b.part()
        out += [
            s
            for s in size_layouts(part, full, card, kind, subject, hw, nodes)
            if s.estimate.nodes == nodes and s.estimate.layout.tp == base.layout.tp
        ]
    return out


def _unit_cost(
    b: Builder, w: Workload, subject: Server | CloudOffer, base: ConfigEstimate
) -> float:
    """One server's price (VAT in), or one instance's rental over the horizon."""
    if isinstance(subject, CloudOffer):
        return rental(b, w, subject, base)[2] / max(1, base.nodes)
    goods, _ = vat_factors(b.reqs)
    return subject.price * goods


def _scalable(sized: Sequence[Sized], gpus_per_node: int) -> ConfigEstimate | None:
    """The smallest target-sized aggregated layout whose replica fits one server."""
    fits = [
        s.estimate
        for s in sized
        if s.estimate.serving is not None
        and s.estimate.serving.disaggregated is None
        and s.estimate.layout.tp * s.estimate.layout.pp <= gpus_per_node
    ]
    return min(fits, key=lambda e: (e.nodes, e.gpus), default=None)


def affordable(b: Builder, kind: str, unit_cost: float) -> int:
    """The most servers (or instances) one candidate's budget could pay for at `unit_cost`
    each (servers: their price; rentals: over the horizon): the tightest cap that applies.
    Without a cap, none beyond the target's own sizes."""
    budget = b.reqs.budget
    caps = [budget.total_max]
    if kind == "server":
        caps.append(budget.capex_max)
    else:
        monthly = budget.monthly_max
        caps.append(monthly * b.reqs.horizon_months if monthly is not None else None)
    given = [c for c in caps if c is not None]
    if not given or unit_cost <= 0:
        return 0
    return int(min(given) // unit_cost)


def counts(smallest: int, most: int) -> list[int]:
    """Fleet sizes from `smallest` to `most`: one by one for `ONE_BY_ONE` counts, then in
    steps of `STEP`, and `most` itself."""
    if most < smallest:
        return []
    sizes = set(range(smallest, min(most, smallest + ONE_BY_ONE) + 1))
    n = float(smallest + ONE_BY_ONE)
    while n < most:
        n = math.ceil(n * STEP)
        sizes.add(min(int(n), most))
    sizes.add(most)
    return sorted(sizes)
