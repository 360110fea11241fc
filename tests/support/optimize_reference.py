"""A seeded generator of small optimiser instances and a brute-force reference solver.

The reference shares no code with the model: it enumerates every assignment of one
choice per workload, derives server counts from the day/night demand, packs each site's
servers into the fewest racks by exhaustive search over rack assignments (not patterns),
and prices the result. Fewest racks is optimal for every objective and every cap: rent,
the monthly spend and rack availability all grow with the rack count, nothing shrinks.

Each assignment is summarised once with the set of requirement names it would violate,
so "is there a plan when only the requirements in E are enforced?" is a filter, which is
what the explanation tests need.
"""

from __future__ import annotations

import itertools
import random
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from gpusolve.optimize.ir import (
    SLOTS_COVERED,
    CloudOption,
    Instance,
    ObjectiveKind,
    OwnedOption,
    Placement,
    Requirement,
    Site,
    Sku,
)

OBJECTIVES: tuple[ObjectiveKind, ...] = ("min-tco", "min-capex", "min-monthly", "max-throughput")


# --------------------------------------------------------------------------- generator


def random_instance(seed: int) -> Instance:
    """Up to 3 workloads, 4 SKUs, 3 sites, 2 cloud offers per workload; small racks so
    packing matters; some options violate requirements; budgets sometimes binding."""
    rng = random.Random(seed)
    workloads = tuple(f"w{i}" for i in range(rng.randint(1, 3)))
    skus = {}
    for i in range(rng.randint(1, 4)):
        cooling = rng.choice([{"air"}, {"liquid"}, {"air", "liquid"}, {"air", "liquid"}])
        skus[f"k{i}"] = Sku(
            id=f"k{i}",
            capex=rng.choice([100, 250, 400, 800, 1500]),
            power_w=rng.choice([2000, 3000, 5000, 8000, 12000, 20000]),
            rack_units=rng.choice([2, 4, 6, 8]),
            cooling=frozenset(cooling),
        )
    sites = {}
    for i in range(rng.randint(1, 3)):
        sites[f"s{i}"] = Site(
            id=f"s{i}",
            region=rng.choice(["north", "south"]),
            cooling=rng.choice(["air", "air", "liquid"]),
            rack_w=rng.choice([10000, 15000, 20000, 30000]),
            rack_units=rng.choice([8, 12, 16, 24, 42]),
            racks_available=rng.randint(1, 4),
            rack_rent_month=rng.choice([0, 5, 10, 20, 40]),
            bandwidth_month=rng.choice([0, 3, 10]),
            energy_month={k: rng.choice([0, 1, 2, 5]) for k in skus},
        )
    horizon = rng.choice([1, 3, 12])
    owned: list[OwnedOption] = []
    cloud: list[CloudOption] = []
    for w in workloads:
        for j in range(rng.randint(1, 4)):
            chosen_sites = rng.sample(sorted(sites), rng.randint(1, len(sites)))
            placements = tuple(
                Placement(
                    site=s,
                    penalty=rng.choice([0, 0, 0, 15]),
                    violates=_maybe(rng, f"regions:{w}", 0.15),
                )
                for s in sorted(chosen_sites)
            )
            owned.append(
                OwnedOption(
                    key=f"{w}.o{j}",
                    workload=w,
                    sku=rng.choice(sorted(skus)),
                    servers=rng.randint(1, 4),
                    slot=rng.choice(["always", "always", "day", "night"]),
                    placements=placements,
                    throughput=rng.randint(1, 50),
                    headroom_permille=rng.randint(0, 300),
                    penalty=rng.choice([0, 0, 10]),
                    violates=_maybe(rng, f"deadline:{w}", 0.15),
                )
            )
        for j in range(rng.randint(0, 2)):
            cloud.append(
                CloudOption(
                    key=f"{w}.c{j}",
                    workload=w,
                    offer=f"offer{j}",
                    region="cloud",
                    instances=rng.randint(1, 4),
                    cost_total=rng.choice([800, 2000, 4000, 9000]),
                    throughput=rng.randint(1, 50),
                    headroom_permille=rng.randint(0, 300),
                    penalty=rng.choice([0, 5]),
                    violates=_maybe(rng, f"deadline:{w}", 0.3),
                )
            )
    names = {n for o in owned for n in o.violates} | {n for c in cloud for n in c.violates}
    names |= {n for o in owned for p in o.placements for n in p.violates}
    requirements = {
        n: Requirement(n, f"test requirement {n}", rng.choice([1, 1, 2])) for n in names
    }
    capex_max = rng.choice([None, None, None, 800, 2000, 5000])
    monthly_max = rng.choice([None, None, None, 200, 600, 2000])
    objective = rng.choice(["min-tco", "min-tco", "min-capex", "min-monthly", "max-throughput"])
    # Drawn last so the instances above stay what they were before weights existed.
    weights = {w: rng.choice([1.0, 1.0, 0.5, 3.0]) for w in workloads}
    return Instance(
        workloads=workloads,
        skus=skus,
        sites=sites,
        owned=tuple(owned),
        cloud=tuple(cloud),
        horizon_months=horizon,
        requirements=requirements,
        capex_max=capex_max,
        monthly_max=monthly_max,
        objective=objective,
        throughput_weights=weights,
    )


def _maybe(rng: random.Random, name: str, p: float) -> frozenset[str]:
    return frozenset({name}) if rng.random() < p else frozenset()


# --------------------------------------------------------------------------- reference


@dataclass(frozen=True)
class Evaluated:
    """One assignment, packed into the fewest racks, priced."""

    keys: tuple[tuple[str, str | None], ...]  # (option key, site) per workload
    violated: frozenset[str]
    capex: int
    rent: int
    energy: int
    bandwidth: int
    cloud: int
    penalties: int
    throughput: int
    racks: tuple[tuple[str, int], ...]  # (site, racks)

    @property
    def tco(self) -> int:
        return self.capex + self.rent + self.energy + self.bandwidth + self.cloud

    @property
    def opex(self) -> int:
        return self.rent + self.energy + self.bandwidth + self.cloud

    def primary(self, objective: ObjectiveKind) -> int:
        if objective == "min-capex":
            return self.capex + self.cloud + self.penalties
        if objective == "min-monthly":
            return self.opex + self.penalties
        if objective == "max-throughput":
            return self.throughput
        return self.tco + self.penalties


def fits(sku: Sku, site: Site) -> bool:
    return (
        site.cooling in sku.cooling
        and sku.power_w <= site.rack_w
        and sku.rack_units <= site.rack_units
    )


@lru_cache(maxsize=100_000)
def min_racks(items: tuple[tuple[int, int], ...], rack_w: int, rack_units: int) -> int:
    """Fewest racks holding every (power, units) item: exhaustive assignment with
    branch-and-bound (items sorted largest first; each goes into an open rack or a new one)."""
    order = sorted(items, reverse=True)
    best = len(order)

    def place(i: int, loads: list[tuple[int, int]]) -> None:
        nonlocal best
        if len(loads) >= best:
            return
        if i == len(order):
            best = len(loads)
            return
        w, u = order[i]
        seen: set[tuple[int, int]] = set()
        for j, (lw, lu) in enumerate(loads):
            if lw + w <= rack_w and lu + u <= rack_units and (lw, lu) not in seen:
                seen.add((lw, lu))
                loads[j] = (lw + w, lu + u)
                place(i + 1, loads)
                loads[j] = (lw, lu)
        loads.append((w, u))
        place(i + 1, loads)
        loads.pop()

    place(0, [])
    return best


def choices_of(
    instance: Instance, workload: str
) -> list[tuple[OwnedOption | CloudOption, Placement | None]]:
    out: list[tuple[OwnedOption | CloudOption, Placement | None]] = []
    for o in instance.owned:
        if o.workload == workload:
            for p in o.placements:
                if fits(instance.skus[o.sku], instance.sites[p.site]):
                    out.append((o, p))
    out += [(c, None) for c in instance.cloud if c.workload == workload]
    return out


def evaluate_all(instance: Instance) -> list[Evaluated]:
    per_workload = [choices_of(instance, w) for w in instance.workloads]
    scores = _scores(instance)
    return [_evaluate(instance, combo, scores) for combo in itertools.product(*per_workload)]


def _scores(instance: Instance) -> dict[str, int]:
    """max-throughput counts each workload's share of its own best throughput (x weight,
    in 1/10,000): tokens/s of different workloads are never added."""
    options = [*instance.owned, *instance.cloud]
    out: dict[str, int] = {}
    for o in options:
        top = max(p.throughput for p in options if p.workload == o.workload)
        weight = instance.throughput_weights.get(o.workload, 1.0)
        out[o.key] = round(10_000 * weight * o.throughput / top) if top else 0
    return out


def _evaluate(
    instance: Instance,
    combo: tuple[tuple[OwnedOption | CloudOption, Placement | None], ...],
    scores: dict[str, int],
) -> Evaluated:
    h = instance.horizon_months
    violated: set[str] = set()
    demand: dict[tuple[str, str, str], int] = defaultdict(int)
    cloud = penalties = throughput = 0
    sites_used: set[str] = set()
    for option, placement in combo:
        violated |= option.violates
        penalties += option.penalty
        throughput += scores[option.key]
        if isinstance(option, CloudOption):
            cloud += option.cost_total
            continue
        assert placement is not None
        violated |= placement.violates
        penalties += placement.penalty
        sites_used.add(placement.site)
        for slot in SLOTS_COVERED[option.slot]:
            demand[(option.sku, placement.site, slot)] += option.servers
    servers: dict[tuple[str, str], int] = defaultdict(int)
    for (sku, where, _), count in demand.items():
        servers[(sku, where)] = max(servers[(sku, where)], count)
    capex = sum(instance.skus[k].capex * n for (k, _), n in servers.items())
    energy = sum(h * instance.sites[s].energy_month[k] * n for (k, s), n in servers.items())
    racks: dict[str, int] = {}
    for site_id in sorted(sites_used):
        site = instance.sites[site_id]
        items = tuple(
            sorted(
                (instance.skus[k].power_w, instance.skus[k].rack_units)
                for (k, s), n in servers.items()
                if s == site_id
                for _ in range(n)
            )
        )
        racks[site_id] = min_racks(items, site.rack_w, site.rack_units)
        if racks[site_id] > site.racks_available:
            violated.add(f"racks:{site_id}")
    rent = sum(h * instance.sites[s].rack_rent_month * r for s, r in racks.items())
    bandwidth = sum(h * instance.sites[s].bandwidth_month for s in sites_used)
    if instance.capex_max is not None and capex > instance.capex_max:
        violated.add("capex")
    opex = rent + energy + bandwidth + cloud
    if instance.monthly_max is not None and opex > h * instance.monthly_max:
        violated.add("monthly")
    keys = tuple((o.key, p.site if p else None) for o, p in combo)
    return Evaluated(
        keys,
        frozenset(violated),
        capex,
        rent,
        energy,
        bandwidth,
        cloud,
        penalties,
        throughput,
        tuple(sorted(racks.items())),
    )


def feasible_under(evaluated: list[Evaluated], enforced: frozenset[str]) -> bool:
    return any(not (e.violated & enforced) for e in evaluated)


def optimum(instance: Instance, evaluated: list[Evaluated]) -> tuple[int, int] | None:
    """(primary objective, TCO + penalties at that primary optimum), or None if no plan."""
    feasible = [e for e in evaluated if not e.violated]
    if not feasible:
        return None
    sign = -1 if instance.objective == "max-throughput" else 1
    best = min(sign * e.primary(instance.objective) for e in feasible)
    at_best = [e for e in feasible if sign * e.primary(instance.objective) == best]
    return sign * best, min(e.tco + e.penalties for e in at_best)


def business_key(
    instance: Instance, keys: tuple[tuple[str, str | None], ...]
) -> tuple[tuple[str, str, str], ...]:
    owned = {o.key: o for o in instance.owned}
    cloud = {c.key: c for c in instance.cloud}
    out = []
    for key, site in keys:
        if key in owned:
            out.append((owned[key].workload, owned[key].sku, site or ""))
        else:
            out.append((cloud[key].workload, cloud[key].offer, ""))
    return tuple(sorted(out))
