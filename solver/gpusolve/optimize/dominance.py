"""Dominance across server models and across cloud offers: a catalogue with many near-copies
(several vendors' quotes for one server, a reseller's price list beside the maker's)
offers many options no optimum can take.

`prune.py` compares options within one (workload, SKU) or (workload, offer); this module
drops whole SKUs and rentals that another beats on every count the single-plan model reads.

Server models: SKU `a` dominates SKU `b` when

* `a` costs strictly less net of its residual value (capex - residual) and no more to buy
  (capex, NIC capex), draws no more power, takes no more rack units, lives in every rack
  cooling `b` lives in, joins the same fabric class with the same NICs, is buyable where
  `b` is, and costs no more energy at idle at every site;
* neither is held in the inventory (owned servers are free, and their counts are per SKU);
* every option on `b` has one on `a` for the same workload that covers no more slots, with
  no more servers, bandwidth, storage, rent (until delivery and a split's burst),
  penalty and violations, spans the
  fabric only where `b`'s does, at least the throughput under max-throughput, and at every
  site of `b` a placement no worse (`prune.placements_cover`).

Then any plan that buys `b` becomes, with every `b` option swapped for its `a` counterpart,
a plan that breaks no requirement (fewer servers per slot share `a`'s count: the pooled
count is at most the two counts added; smaller servers pack into no more racks; the same
fabric ports; one spare per site instead of two) and is no worse on any criterion the
stages minimise before the total cost, and strictly cheaper in it (at least one `b` server
was bought at a strictly higher net price). So no optimum, under any objective, buys `b`,
and dropping it keeps the optimum and every bound. The tie-breaks come after the total
cost, so they never see the difference.

Rentals: option `a` dominates `b` (same workload, any offer) when it costs no more, has no
more penalty, no more violations, at least the throughput under max-throughput, and less
cost plus penalty in sum: rentals carry no shared capacity in the model, so the swap is
per workload.

Only the single plan's model uses this (`model.build`); the multi-period and scenario
models price a SKU differently per period or scenario, where a SKU cheaper in one is not
cheaper in all. Top-k lists keep every option (`alternatives.py`): a distinct plan on a
dearer copy is still a distinct plan.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from gpusolve.optimize.ir import SLOTS_COVERED, CloudOption, Instance, OwnedOption, Sku
from gpusolve.optimize.prune import placements_cover


def _sku_beats(a: Sku, b: Sku, instance: Instance) -> bool:
    """`a` no worse than `b` on every server attribute the model reads, strictly cheaper
    net of residual value."""
    if not (
        a.capex - a.residual < b.capex - b.residual
        and a.capex <= b.capex
        and a.nic_capex <= b.nic_capex
        and a.power_w <= b.power_w
        and a.rack_units <= b.rack_units
        and a.cooling >= b.cooling
        and a.fabric == b.fabric
        and a.nics == b.nics
        and (a.buyable or not b.buyable)
        and a.lead_time_days <= b.lead_time_days
    ):
        return False
    for site in instance.sites.values():
        theirs = site.energy_month.get(b.id)
        ours = site.energy_month.get(a.id)
        if theirs is not None and (ours is None or ours > theirs):
            return False
    return True


def _option_covers(a: OwnedOption, b: OwnedOption, by_throughput: bool) -> bool:
    """`a` (another SKU) can stand in for `b` in any plan: see the module docstring."""
    return (
        set(SLOTS_COVERED[a.slot]) <= set(SLOTS_COVERED[b.slot])
        and a.servers <= b.servers
        and a.bandwidth_mbps <= b.bandwidth_mbps
        and a.storage_gb <= b.storage_gb
        and a.rent <= b.rent
        and a.penalty + a.burst_penalty <= b.penalty + b.burst_penalty
        and a.violates <= b.violates
        and (b.spans or not a.spans)
        and (not by_throughput or a.throughput >= b.throughput)
        and placements_cover(a, b)
    )


def _all_covered(
    theirs: Sequence[OwnedOption], ours: dict[str, list[OwnedOption]], by_throughput: bool
) -> bool:
    return all(
        any(_option_covers(a, b, by_throughput) for a in ours.get(b.workload, ())) for b in theirs
    )


def dominated_skus(instance: Instance, owned: Sequence[OwnedOption]) -> frozenset[str]:
    """SKUs some other SKU dominates, among those `owned` uses."""
    by_sku: dict[str, list[OwnedOption]] = defaultdict(list)
    for option in owned:
        by_sku[option.sku].append(option)
    stocked = {line.sku for line in instance.stock}
    by_throughput = instance.objective == "max-throughput"
    candidates = [k for k in by_sku if k not in stocked]
    # Only SKUs of one fabric, NIC count and cooling set can dominate each other: compare
    # within those classes, cheapest net price first (a dominator is strictly cheaper).
    classes: dict[tuple[object, ...], list[Sku]] = defaultdict(list)
    for k in candidates:
        sku = instance.skus[k]
        classes[(sku.fabric, sku.nics)].append(sku)
    dropped: set[str] = set()
    for members in classes.values():
        members.sort(key=lambda s: (s.capex - s.residual, s.id))
        workloads = {k.id: _by_workload(by_sku[k.id]) for k in members}
        for i, b in enumerate(members):
            for a in members[:i]:
                if a.id in dropped or not _sku_beats(a, b, instance):
                    continue
                if _all_covered(by_sku[b.id], workloads[a.id], by_throughput):
                    dropped.add(b.id)
                    break
    return frozenset(dropped)


def _by_workload(options: Sequence[OwnedOption]) -> dict[str, list[OwnedOption]]:
    out: dict[str, list[OwnedOption]] = defaultdict(list)
    for option in options:
        out[option.workload].append(option)
    return out


def prune_owned_across(instance: Instance, owned: Sequence[OwnedOption]) -> list[OwnedOption]:
    """`owned` less the options on dominated SKUs."""
    dropped = dominated_skus(instance, owned)
    return [o for o in owned if o.sku not in dropped]


def _rental_beats(a: CloudOption, b: CloudOption, by_throughput: bool) -> bool:
    return (
        a.cost_total <= b.cost_total
        and a.penalty <= b.penalty
        and a.cost_total + a.penalty < b.cost_total + b.penalty
        and a.violates <= b.violates
        and (not by_throughput or a.throughput >= b.throughput)
    )


def prune_cloud_across(instance: Instance, cloud: Sequence[CloudOption]) -> list[CloudOption]:
    """`cloud` less the rentals another rental of the same workload dominates."""
    by_throughput = instance.objective == "max-throughput"
    by_workload: dict[str, list[CloudOption]] = defaultdict(list)
    for option in cloud:
        by_workload[option.workload].append(option)
    dropped: set[int] = set()
    for options in by_workload.values():
        ordered = sorted(options, key=lambda c: (c.cost_total + c.penalty, c.key))
        kept: list[CloudOption] = []
        for b in ordered:
            # A dominator is strictly cheaper in sum, so it comes earlier; one dropped is
            # dominated by a kept one (dominance is transitive).
            if any(_rental_beats(a, b, by_throughput) for a in kept):
                dropped.add(id(b))
            else:
                kept.append(b)
    return [c for c in cloud if id(c) not in dropped]
