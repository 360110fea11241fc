"""Which options and placements enter the model, before it is built.

Structural filter: a placement whose SKU cannot live in that site's racks at all (cooling,
or one server above the rack's kW or U) can never be chosen, so it is dropped in every
mode; an option left with no placement goes with it.

Rack count: a placement whose servers alone need more racks than the site has (one SKU
packs homogeneously, so the count is exact) breaks that site's rack requirement whatever
else the plan holds. It is tagged with the requirement, so the requirement filter drops it
in normal mode and explain mode ties it to the requirement's literal: GLOP's LP
(`relaxation.py`) would otherwise take fractions of fleets too large for small sites, which
CP-SAT's root propagation forbids (figures in benchmarks/README.md).

Requirement filter (normal mode only): an option or placement that violates an enforced
requirement is dropped rather than created and forbidden; in explain mode it stays, tied
to the requirement's literal.

Dominance: `a` dominates `b` when both serve the same workload on the same SKU (or cloud
offer), `a` runs in a subset of `b`'s slots with no more servers, no more penalty, no
extra violation, and at every site of `b` with a placement that is no worse (and, for
max-throughput, no less throughput). Swapping `b` for `a` in any plan then raises no cost,
frees capacity and breaks no requirement, so dropping `b` keeps the optimum, the
feasibility verdict and the explanation. The dominator always offers the same business key
(workload, SKU or offer, site), so no distinct plan disappears from the top-k list either.

Memory headroom is compared too: the model reads it (the tie-break stage after the cost
maximises it), and an option with more servers and more headroom can win that stage when
its extra servers would sit idle anyway (the other shift of a day/night pair needs them),
so dropping it would change the plan. With the candidates now holding every layout size
that meets a deadline (`candidates/generate.py`), the dominance test is exact: an option is
dropped only when another is at least as good on every attribute the model reads (slot,
servers, bandwidth, placements and their penalties, busy energy and violations, option
penalty and violations, headroom; cost for a rental; throughput under max-throughput).
Between variants equal in all of them the first listed is kept. Dominance is checked
within (workload, SKU) and (workload, offer) groups: quadratic in a group only.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, TypeVar

from gpusolve.optimize.ir import (
    SLOTS_COVERED,
    CloudOption,
    Instance,
    OwnedOption,
    Placement,
    Site,
    Sku,
)
from gpusolve.optimize.patterns import fits_site, racks_alone

Mode = Literal["normal", "explain"]
T = TypeVar("T", OwnedOption, CloudOption)


def placements_cover(better: OwnedOption, worse: OwnedOption) -> bool:
    """Every placement of `worse` has one at the same site in `better` that is no worse."""
    by_site = {p.site: p for p in better.placements}
    for p in worse.placements:
        q = by_site.get(p.site)
        if q is None or q.penalty > p.penalty or not q.violates <= p.violates:
            return False
        if q.busy_energy > p.busy_energy or q.bridge > p.bridge:
            return False
    return True


def owned_dominates(a: OwnedOption, b: OwnedOption, by_throughput: bool = False) -> bool:
    """`a` can replace `b` in any plan at no higher cost and with no extra violation."""
    return (
        a.workload == b.workload
        and a.sku == b.sku
        and set(SLOTS_COVERED[a.slot]) <= set(SLOTS_COVERED[b.slot])
        and a.servers <= b.servers
        and a.bandwidth_mbps <= b.bandwidth_mbps
        and a.penalty + a.burst_penalty <= b.penalty + b.burst_penalty
        and a.rent <= b.rent
        and a.violates <= b.violates
        and a.headroom_permille >= b.headroom_permille
        and (not by_throughput or a.throughput >= b.throughput)
        and placements_cover(a, b)
    )


def cloud_dominates(a: CloudOption, b: CloudOption, by_throughput: bool = False) -> bool:
    return (
        a.workload == b.workload
        and a.offer == b.offer
        and a.cost_total <= b.cost_total
        and a.penalty <= b.penalty
        and a.violates <= b.violates
        and a.headroom_permille >= b.headroom_permille
        and (not by_throughput or a.throughput >= b.throughput)
    )


def prune_dominated(
    options: Sequence[T],
    dominates: Callable[[T, T], bool],
    preference: Callable[[T], tuple[int, ...]],
) -> list[T]:
    """Drop options dominated by another. Of mutually dominating options (equal in every
    respect that costs or breaks something) keep the preferred one (more headroom, more
    throughput), then the first listed, so the tie-break still sees the best variant and
    the result depends on nothing but the input."""
    kept: list[T] = []
    for i, b in enumerate(options):
        beaten = False
        for j, a in enumerate(options):
            if i == j or not dominates(a, b):
                continue
            if not dominates(b, a) or (preference(a), -j) > (preference(b), -i):
                beaten = True
                break
        if not beaten:
            kept.append(b)
    return kept


def _grouped_prune(
    options: Iterable[T],
    group: Callable[[T], tuple[str, str]],
    dominates: Callable[[T, T], bool],
) -> list[T]:
    order = list(options)
    groups: dict[tuple[str, str], list[T]] = defaultdict(list)
    for option in order:
        groups[group(option)].append(option)
    keep: set[int] = set()
    for members in groups.values():
        keep.update(id(o) for o in prune_dominated(members, dominates, _preference))
    return [o for o in order if id(o) in keep]


def _preference(option: OwnedOption | CloudOption) -> tuple[int, ...]:
    return (option.headroom_permille, option.throughput)


def _allowed(violates: frozenset[str], mode: Mode, relax: frozenset[str]) -> bool:
    return mode == "explain" or violates <= relax


def usable_owned(
    instance: Instance, mode: Mode, relax: frozenset[str], prune: bool = True
) -> list[OwnedOption]:
    """Owned options reduced to the placements that can exist in this build."""
    out: list[OwnedOption] = []
    for option in instance.owned:
        if not _allowed(option.violates, mode, relax):
            continue
        sku = instance.skus[option.sku]
        placements: list[Placement] = []
        for placement in option.placements:
            site = instance.sites[placement.site]
            if not fits_site(sku, site):
                continue
            tagged = _rack_tagged(placement, sku, site, option.servers)
            if _allowed(tagged.violates, mode, relax):
                placements.append(tagged)
        if placements:
            out.append(_with_placements(option, tuple(placements)))
    if not prune:
        return out
    by_throughput = instance.objective == "max-throughput"
    return _grouped_prune(
        out,
        lambda o: (o.workload, o.sku),
        lambda a, b: owned_dominates(a, b, by_throughput),
    )


def _rack_tagged(placement: Placement, sku: Sku, site: Site, servers: int) -> Placement:
    """The placement, tagged with the site's rack requirement when its servers alone need
    more racks than the site has (`fits_site` holds, so `racks_alone` has a count)."""
    racks = racks_alone(sku, site, servers)
    if racks is not None and racks <= site.racks_available:
        return placement
    name = f"racks:{site.id}"
    return dataclasses.replace(placement, violates=placement.violates | {name})


def _with_placements(option: OwnedOption, placements: tuple[Placement, ...]) -> OwnedOption:
    if placements == option.placements:
        return option
    return dataclasses.replace(option, placements=placements)


def usable_cloud(
    instance: Instance, mode: Mode, relax: frozenset[str], prune: bool = True
) -> list[CloudOption]:
    out = [c for c in instance.cloud if _allowed(c.violates, mode, relax)]
    if not prune:
        return out
    by_throughput = instance.objective == "max-throughput"
    return _grouped_prune(
        out, lambda c: (c.workload, c.offer), lambda a, b: cloud_dominates(a, b, by_throughput)
    )
