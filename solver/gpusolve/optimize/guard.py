"""Scale guard: every coefficient the model will add up must fit CP-SAT's integers.

CP-SAT works in int64 and rejects (or, through pybind11, crashes on) a model whose sums
could overflow. A price pasted in fen instead of yuan, or tokens off by 10^9, would then
surface as a traceback or a false "no feasible plan". Checked once per build, before any
variable exists, the largest total each cost family can reach must stay within
`LIMIT`; an instance beyond it is the user's input error, naming the field.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpusolve.errors import InputError
from gpusolve.optimize.ir import Instance

# 2^52 (4.5e15): the solver folds lexicographic criteria under the same limit
# (`solve._FOLD_LIMIT`), every integer up to it is exact as a float (the plan's figures
# are floats), and it leaves 2^11 of headroom below int64 for CP-SAT's own sums.
LIMIT = 2**52


@dataclass(frozen=True)
class Term:
    """The largest total one input figure can contribute, and where the user wrote it."""

    total: int
    field: str


def terms(instance: Instance) -> list[Term]:
    """Upper bounds of every sum in the model, one per input figure."""
    h = instance.horizon_months
    most: dict[tuple[str, str], int] = defaultdict(int)  # (workload, sku) -> most servers
    for o in instance.owned:
        most[(o.workload, o.sku)] = max(most[(o.workload, o.sku)], o.servers)
    servers_ub: dict[str, int] = defaultdict(int)  # sku -> most servers the model may buy
    for (_, sku), n in most.items():
        servers_ub[sku] += n
    total_servers = sum(servers_ub.values())
    found: list[Term] = []
    for sku, n in servers_ub.items():
        found.append(Term(instance.skus[sku].capex * n, f"servers[{sku}].price"))
    for site in instance.sites.values():
        racks = min(site.racks_available, total_servers)
        months = max(h, site.rent_months)
        found.append(
            Term(
                months * site.rack_rent_month * racks + site.setup_fee,
                f"colo_offers[{site.id}].rack_price_per_month (and setup_fee)",
            )
        )
        found.append(
            Term(h * site.bandwidth_month, f"colo_offers[{site.id}].bandwidth_price_per_mbps_month")
        )
        for sku, energy in site.energy_month.items():
            found.append(
                Term(
                    h * energy * servers_ub.get(sku, 0),
                    f"colo_offers[{site.id}].power_price_per_kwh (with servers[{sku}].power_kw)",
                )
            )
    for c in instance.cloud:
        where = (
            f"cloud_offers[{c.offer}].price_per_hour (x {c.instances} instance(s) x the hours "
            f"workload {c.workload} runs)"
        )
        found.append(Term(c.cost_total, where))
        found.append(Term(c.throughput, f"workload {c.workload}'s throughput on {c.offer}"))
        found.append(Term(c.penalty, f"rule penalties on workload {c.workload}"))
    for o in instance.owned:
        found.append(Term(o.throughput, f"workload {o.workload}'s throughput on {o.sku}"))
        worst = max((p.penalty for p in o.placements), default=0)
        found.append(Term(o.penalty + worst, f"rule penalties on workload {o.workload}"))
        moving = max((p.bridge for p in o.placements), default=0)
        if o.rent or o.burst_penalty or moving:
            rentals = o.rent + o.burst_penalty + moving
            found.append(Term(rentals, f"workload {o.workload}'s rentals"))
        busy = max((p.busy_energy for p in o.placements), default=0)
        found.append(Term(busy, f"energy of workload {o.workload} on {o.sku} while it runs"))
        mbps = o.bandwidth_mbps * max(
            (instance.sites[p.site].extra_mbps_cost for p in o.placements), default=0
        )
        found.append(Term(mbps, f"workload {o.workload}'s bandwidth_mbps"))
    if instance.capex_max is not None:
        found.append(Term(instance.capex_max, "budget.capex_max"))
    if instance.monthly_max is not None:
        found.append(Term(instance.monthly_max * h, "budget.monthly_max"))
    if instance.total_max is not None:
        found.append(Term(instance.total_max, "budget.total_max"))
    return found


def _total(instance: Instance) -> int:
    """The sum of `terms` without naming them: the common case, checked on every build."""
    h = instance.horizon_months
    most: dict[tuple[str, str], int] = defaultdict(int)
    for o in instance.owned:
        most[(o.workload, o.sku)] = max(most[(o.workload, o.sku)], o.servers)
    servers_ub: dict[str, int] = defaultdict(int)
    for (_, sku), n in most.items():
        servers_ub[sku] += n
    total_servers = sum(servers_ub.values())
    total = sum(instance.skus[sku].capex * n for sku, n in servers_ub.items())
    for site in instance.sites.values():
        racks = min(site.racks_available, total_servers)
        total += max(h, site.rent_months) * site.rack_rent_month * racks + site.setup_fee
        total += h * site.bandwidth_month
        total += sum(h * e * servers_ub.get(k, 0) for k, e in site.energy_month.items())
    total += sum(c.cost_total + c.throughput + c.penalty for c in instance.cloud)
    total += sum(
        o.throughput
        + o.penalty
        + o.rent
        + o.burst_penalty
        + max((p.penalty for p in o.placements), default=0)
        + max((p.busy_energy for p in o.placements), default=0)
        + max((p.bridge for p in o.placements), default=0)
        + o.bandwidth_mbps
        * max((instance.sites[p.site].extra_mbps_cost for p in o.placements), default=0)
        for o in instance.owned
    )
    total += (instance.capex_max or 0) + (instance.monthly_max or 0) * h
    total += instance.total_max or 0
    return total


def check_scale(instance: Instance) -> None:
    """Raise an input error naming the figure that would overflow the model's integers."""
    if _total(instance) <= LIMIT:
        return
    found = terms(instance)
    worst = max(found, key=lambda t: t.total, default=None)
    total = sum(t.total for t in found)
    if worst is None or total <= LIMIT:
        return
    raise InputError.single(
        worst.field,
        f"this figure makes a total of {worst.total:.3g} (all terms together {total:.3g}), "
        f"beyond the {LIMIT:.3g} the exact optimiser can add up in its 64-bit integers",
        hint="check its unit and size (a price in fen instead of yuan? tokens off by 10^6? "
        "a rule penalty far above any price?)",
    )
