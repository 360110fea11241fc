"""Racks per site: how the servers bought at a site are packed into racks within kW and U.

Three formulations, chosen per site: counts per maximal fill pattern (`patterns.py`;
symmetry-free, the default), one integer vector per rack with symmetry breaking (exact in
one solve: explain mode and the two-stage model), and an aggregate relaxation made exact by
cuts between solves (`lazy.py`; normal mode, where a site has too many patterns).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from gpusolve.optimize.builder import Builder, Expr, OwnedVar, Var, wsum, wsum_expr
from gpusolve.optimize.ir import Site
from gpusolve.optimize.patterns import (
    Shape,
    SitePatterns,
    TooManyPatterns,
    first_fit_decreasing,
    max_count,
    shape_classes,
    site_patterns,
)


@dataclass(frozen=True)
class RelaxedSite:
    """The model-side handles of one relaxed site."""

    site: str
    shapes: tuple[Shape, ...]
    rack_w: int
    rack_units: int
    demand: tuple[cp_model.LinearExpr, ...]  # servers per shape at the site
    racks: cp_model.IntVar  # R
    per_rack: tuple[int, ...]  # most servers of each shape one rack can usefully hold
    racks_ub: int  # R's upper bound


@dataclass(frozen=True)
class RackBin:
    """One rack of the per-rack fallback: open flag and slots used per shape."""

    open: Var
    counts: tuple[Var, ...]


@dataclass(frozen=True)
class SitePacking:
    """The packing variables of one site, in whichever formulation it got."""

    site: Site
    patterns: SitePatterns  # shapes and members always; fills empty in bin mode
    pattern_racks: tuple[Var, ...]  # racks per fill (pattern mode)
    bins: tuple[RackBin, ...]  # per-rack fallback (bin mode)
    total: Expr  # racks rented at this site
    total_ub: int
    relaxed: RelaxedSite | None = None  # aggregate relaxation (lazy mode), R is `total`


def add_packing(
    b: Builder,
    owned: Sequence[OwnedVar],
    servers: dict[tuple[str, str], Var],
    servers_ub: dict[tuple[str, str], int],
    used: dict[str, Var],
    choices: int,
) -> dict[str, SitePacking]:
    out: dict[str, SitePacking] = {}
    skus_at: dict[str, set[str]] = defaultdict(set)
    users: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for o in owned:
        skus_at[o.placement.site].add(o.option.sku)
        users[o.placement.site][o.option.sku].add(o.option.workload)
    limit = b.options.pattern_limit
    if choices >= b.options.large_choices:
        limit = min(limit, b.options.large_pattern_limit)
    for site_id in sorted(skus_at):
        site = b.instance.sites[site_id]
        skus = [b.instance.skus[k] for k in sorted(skus_at[site_id])]
        demand_ub = {k: ub for (k, s), ub in servers_ub.items() if s == site_id}
        shapes, members = shape_classes(skus)
        pats = SitePatterns(site_id, shapes, members, ())
        per_rack = _bin_variables(b, site, pats, demand_ub)
        try:
            pats = site_patterns(
                site,
                skus,
                skus_at[site_id],
                min(limit, per_rack),
                demand_ub,
                users[site_id],
            )
            pack = _pattern_packing(b, site, pats, servers, demand_ub)
        except TooManyPatterns:
            if per_rack < limit:  # more fills than per-rack variables: the smaller, exact
                pack = _bin_packing(b, site, pats, servers, demand_ub)
            elif b.mode == "normal" and b.options.fallback == "lazy":
                pack = _relaxed_packing(b, site, pats, servers, demand_ub)
            else:
                pack = _bin_packing(b, site, pats, servers, demand_ub)
        out[site_id] = pack
        name = f"racks:{site_id}"
        if b.enforced(name):
            b.guard(b.model.add(pack.total <= site.racks_available), name)
        # Racks only where something is placed (and so bandwidth is paid): a big-M bounded
        # by the site's own rack bound, not an arbitrary constant.
        b.model.add(pack.total <= pack.total_ub * used[site_id])
    return out


def _bin_variables(b: Builder, site: Site, pats: SitePatterns, demand_ub: dict[str, int]) -> int:
    """Variables of the per-rack model of a site: a Boolean and a count per shape for each
    rack it can need. A site with few large racks and many shapes can have far more
    maximal fills than that (a 40 kW rack holds many mixes), each an integer column
    CP-SAT's presolve and search carry although a handful of racks is all there is to
    decide (three racks, 1,159 fills on one benchmark site). Both models are exact; the
    smaller is taken, and the enumeration stops as soon as the fills outnumber this. Only
    when both are over the pattern limit does a site fall back to the relaxed packing."""
    return _racks_bound(b, site, pats, demand_ub) * (len(pats.shapes) + 1)


def _racks_bound(b: Builder, site: Site, pats: SitePatterns, demand_ub: dict[str, int]) -> int:
    """Racks a site can need: first-fit decreasing of the largest demand the options can
    put on it (the fewest racks never grow when servers are removed, so this bounds every
    plan) and, when the availability requirement is hard, no more than are available.
    Far tighter than one homogeneous rack group per shape."""
    counts = {
        shape: sum(demand_ub.get(k, 0) for k in members)
        for shape, members in zip(pats.shapes, pats.members, strict=True)
    }
    hard = b.mode == "normal" and b.enforced(f"racks:{site.id}")
    cap = site.racks_available if hard else None
    return first_fit_decreasing(counts, site.rack_w, site.rack_units, cap)


def _coverage(
    b: Builder,
    pats: SitePatterns,
    servers: dict[tuple[str, str], Var],
    slots: Sequence[Expr],
) -> None:
    """Slots of each shape hold the servers of every SKU of that shape at the site."""
    for slot, demand in zip(slots, _shape_demand(pats, servers), strict=True):
        b.model.add(slot >= demand)


def _shape_demand(pats: SitePatterns, servers: dict[tuple[str, str], Var]) -> tuple[Expr, ...]:
    """Servers of each shape at the site: the sum over the SKUs of that shape."""
    return tuple(wsum([(1, servers[(k, pats.site)]) for k in m]) for m in pats.members)


def _pattern_packing(
    b: Builder,
    site: Site,
    pats: SitePatterns,
    servers: dict[tuple[str, str], Var],
    demand_ub: dict[str, int],
) -> SitePacking:
    total_ub = _racks_bound(b, site, pats, demand_ub)
    shape_ub = [sum(demand_ub.get(k, 0) for k in m) for m in pats.members]
    racks: list[Var] = []
    for i, fill in enumerate(pats.fills):
        # More racks of one fill than it takes to hold the largest demand of every shape
        # in it alone are never needed (they add rent and hold nothing new).
        alone = max(math.ceil(shape_ub[h] / c) for h, c in enumerate(fill) if c)
        racks.append(b.model.new_int_var(0, min(total_ub, alone), f"r[{site.id}#{i}]"))
    slots = [
        wsum([(fill[h], r) for fill, r in zip(pats.fills, racks, strict=True)])
        for h in range(len(pats.shapes))
    ]
    _coverage(b, pats, servers, slots)
    total = wsum([(1, r) for r in racks])
    return SitePacking(site, pats, tuple(racks), (), total, total_ub)


def _bin_packing(
    b: Builder,
    site: Site,
    pats: SitePatterns,
    servers: dict[tuple[str, str], Var],
    demand_ub: dict[str, int],
) -> SitePacking:
    """Per-rack fallback when patterns explode (explain mode, or `fallback="bins"`)."""
    total_ub = _racks_bound(b, site, pats, demand_ub)
    caps = _per_rack_caps(site, pats, demand_ub)
    bins = rack_bins(b.model, site.id, pats.shapes, site.rack_w, site.rack_units, caps, total_ub)
    slots = [wsum([(1, rack.counts[h]) for rack in bins]) for h in range(len(pats.shapes))]
    _coverage(b, pats, servers, slots)
    total = wsum([(1, rack.open) for rack in bins])
    return SitePacking(site, pats, (), bins, total, total_ub)


def _per_rack_caps(site: Site, pats: SitePatterns, demand_ub: dict[str, int]) -> tuple[int, ...]:
    """Most servers of each shape one rack can usefully hold: what fits, and no more than
    the site could ever need."""
    return tuple(
        min(max_count(shape, site.rack_w, site.rack_units), sum(demand_ub.get(k, 0) for k in m))
        for shape, m in zip(pats.shapes, pats.members, strict=True)
    )


def rack_bins(
    model: cp_model.CpModel,
    site_id: str,
    shapes: Sequence[Shape],
    rack_w: int,
    rack_units: int,
    caps: Sequence[int],
    racks: int,
) -> tuple[RackBin, ...]:
    """`racks` racks, each holding counts per shape within kW and U. Symmetry breaking:
    open racks come first and carry non-increasing power, so permuting racks cannot produce
    a new solution except among equal loads. Also used by the solve to make a relaxed site
    exact once its packing cuts keep being dodged (`search.staged.LazyStages`)."""
    bins: list[RackBin] = []
    loads: list[Expr] = []
    for j in range(racks):
        open_ = model.new_bool_var(f"open[{site_id}#{j}]")
        counts = tuple(
            model.new_int_var(0, cap, f"z[{site_id}#{j},{h}]") for h, cap in enumerate(caps)
        )
        power = wsum([(s.power_w, c) for s, c in zip(shapes, counts, strict=True)])
        units = wsum([(s.rack_units, c) for s, c in zip(shapes, counts, strict=True)])
        model.add(power <= rack_w * open_)
        model.add(units <= rack_units * open_)
        if bins:
            model.add_implication(open_, bins[-1].open)
            model.add(power <= loads[-1])
        bins.append(RackBin(open_, counts))
        loads.append(power)
    return tuple(bins)


def _relaxed_packing(
    b: Builder,
    site: Site,
    pats: SitePatterns,
    servers: dict[tuple[str, str], Var],
    demand_ub: dict[str, int],
) -> SitePacking:
    """Racks R bounded below by what any packing needs: capacity summed over racks,
    each shape's per-rack count, and for k = 1..4, at most k items per rack larger than
    1/(k+1) of its kW (or U). Not exact: the solve adds cuts from exact packings."""
    total_ub = _racks_bound(b, site, pats, demand_ub)
    racks = b.model.new_int_var(0, total_ub, f"R[{site.id}]")
    demand = _shape_demand(pats, servers)
    shapes = pats.shapes
    b.model.add(
        wsum_expr([(s.power_w, d) for s, d in zip(shapes, demand, strict=True)])
        <= site.rack_w * racks
    )
    b.model.add(
        wsum_expr([(s.rack_units, d) for s, d in zip(shapes, demand, strict=True)])
        <= site.rack_units * racks
    )
    for s, d in zip(shapes, demand, strict=True):
        b.model.add(d <= max_count(s, site.rack_w, site.rack_units) * racks)
    for k in range(1, 5):
        for sizes, cap in (
            ([s.power_w for s in shapes], site.rack_w),
            ([s.rack_units for s in shapes], site.rack_units),
        ):
            big = [d for size, d in zip(sizes, demand, strict=True) if size * (k + 1) > cap]
            if big:
                b.model.add(wsum_expr([(1, d) for d in big]) <= k * racks)
    caps = _per_rack_caps(site, pats, demand_ub)
    relaxed = RelaxedSite(
        site.id, shapes, site.rack_w, site.rack_units, demand, racks, caps, total_ub
    )
    return SitePacking(site, pats, (), (), racks, total_ub, relaxed)
