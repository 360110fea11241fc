"""Deployment options for every workload: owned servers at colo sites, or cloud rentals.

Normal mode keeps only options that satisfy every requirement; explain mode also keeps
the best option that breaks each requirement, tagged with the requirement's name, so the
optimiser can say which requirements conflict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from gpusolve.candidates import preferences
from gpusolve.candidates.builder import Builder, region_ok
from gpusolve.candidates.burst import mixed_options, with_bursts
from gpusolve.candidates.delivery import with_bridges
from gpusolve.candidates.financing import with_financing
from gpusolve.candidates.margin import held_back
from gpusolve.candidates.margin import sized as with_margins
from gpusolve.candidates.options import cloud_options, owned_options
from gpusolve.candidates.owned import contracted_sites, with_inventory
from gpusolve.candidates.pricing import (
    fabric_classes,
    finance_terms,
    price_sku,
    residual_share,
    site_offers,
    vat_factors,
)
from gpusolve.candidates.records import Candidates, OptionMeta
from gpusolve.candidates.reserve import rack_reserve
from gpusolve.models.catalog import Catalog
from gpusolve.models.money import to_money
from gpusolve.models.plan import UnmetPreference
from gpusolve.models.policy import WorkloadPolicy, share_terms
from gpusolve.models.requirements import Requirements, Workload
from gpusolve.optimize import ir


def build_candidates(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    *,
    explain: bool = False,
    elsewhere: Mapping[str, Sequence[frozenset[preferences.Key]]] | None = None,
) -> Candidates:
    """The options of every workload on `catalog`. `elsewhere`: per workload, what each
    allowed option not generated here misses (when `catalog` is a part of the catalogue
    whose other options exist already): a preference is unmeetable only if those miss it
    too."""
    # Options are built for each workload's target plus its margin (`margin.py`); the plan
    # reports what they deliver against the target as written.
    written = {w.name: w.deadline_hours for w in reqs.workloads}
    reqs = with_margins(reqs)
    b = Builder(reqs, catalog, policies, explain)
    b.written_deadline = written
    b.terms = finance_terms(reqs, policies)
    chosen = [p.params for p in policies.values()]
    b.reserves = {o.id: rack_reserve(o, chosen) for o in catalog.colo_offers.values()}
    unmet: list[UnmetPreference] = []
    for workload in reqs.workloads:
        owned_options(b, workload)
        cloud_options(b, workload)
        mixed_options(b, workload)
        unmet += _drop_unmeetable(b, workload, (elsewhere or {}).get(workload.name, ()))
    sites = contracted_sites(site_offers(b), reqs)
    used_skus = {o.sku for o in b.owned}
    skus = {
        s.id: price_sku(s, reqs, catalog, b.terms)
        for s in catalog.servers.values()
        if s.id in used_skus
    }
    fabrics = fabric_classes(catalog, [catalog.servers[k] for k in skus], reqs)
    for site in sites.values():
        b.require(f"racks:{site.id}", f"{site.racks_available} racks available at {site.id}", 8)
    capex_max = reqs.budget.capex_max
    monthly_max = reqs.budget.monthly_max
    currency = reqs.currency
    if capex_max is not None:
        b.require("capex", f"capex cap of {capex_max:,.0f} {currency}", 2)
    if monthly_max is not None:
        b.require("monthly", f"monthly spend cap of {monthly_max:,.0f} {currency}", 2)
    total_max = reqs.budget.total_max
    if total_max is not None:
        b.require("total", f"total spend cap of {total_max:,.0f} {currency} over the horizon", 2)
    instance = ir.Instance(
        workloads=tuple(w.name for w in reqs.workloads),
        skus=skus,
        sites=sites,
        owned=tuple(b.owned),
        cloud=tuple(b.cloud),
        bursts=tuple(b.bursts),
        horizon_months=reqs.horizon_months,
        requirements=b.requirements,
        capex_max=to_money(capex_max) if capex_max is not None else None,
        monthly_max=to_money(monthly_max) if monthly_max is not None else None,
        total_max=to_money(total_max) if total_max is not None else None,
        objective=reqs.objective,
        throughput_weights={w.name: w.throughput_weight for w in reqs.workloads},
        spares=reqs.finance.spares == "n+1",
        fabrics=fabrics,
        missed=b.missed,
    )
    instance = with_inventory(instance, reqs, catalog)
    instance = with_financing(with_bridges(with_bursts(instance)), reqs)
    vat_goods, vat_services = vat_factors(reqs)
    return Candidates(
        instance,
        b.meta,
        b.rejections,
        explain,
        residual_share=residual_share(reqs, b.terms),
        finance_terms=b.terms,
        vat_goods=vat_goods,
        vat_services=vat_services,
        unmet=unmet,
        margin_misses=held_back(b.margin_misses, _offered(b.meta)),
    )


def _offered(meta: Mapping[str, OptionMeta]) -> set[tuple[str, str]]:
    """(workload, server or cloud offer) of every option built."""
    return {(m.workload, m.server or m.cloud_offer or "") for m in meta.values()}


def _drop_unmeetable(
    b: Builder, w: Workload, elsewhere: Sequence[frozenset[preferences.Key]] = ()
) -> list[UnmetPreference]:
    """Strip from `w`'s options the preferences none of its allowed options, here or
    `elsewhere`, meets (`preferences.py`), and say why each could not be met."""
    owned = [o for o in b.owned if o.workload == w.name]
    cloud = [c for c in b.cloud if c.workload == w.name]
    missed: list[tuple[str, frozenset[preferences.Key]]] = []
    for o in owned:
        meta = b.meta[o.key]
        mine = preferences.keys(meta.charges)
        missed += [
            (meta.card, mine | preferences.keys(meta.site_charges.get(p.site, ())))
            for p in o.placements
            if not o.violates and not p.violates
        ]
    missed += [
        (b.meta[c.key].card, preferences.keys(b.meta[c.key].charges))
        for c in cloud
        if not c.violates
    ]
    b.missed[w.name] = frozenset(missed)
    drop = preferences.unmeetable([keys for _, keys in missed] + list(elsewhere))
    if not drop:
        return []
    keys = [o.key for o in owned] + [c.key for c in cloud]
    charged = [c for key in keys for c in b.meta[key].charges]
    charged += [c for o in owned for cs in b.meta[o.key].site_charges.values() for c in cs]
    rejected = {r.candidate: r.reasons for r in b.rejections.get(w.name, [])}
    placed = {p.site for o in owned if not o.violates for p in o.placements if not p.violates}
    for offer in b.catalog.colo_offers.values():
        if offer.id in placed:
            continue
        if not region_ok(b.reqs, w, offer.region, offer.city):
            rejected[offer.id] = [f"region {offer.region} is not allowed for {w.name}"]
        else:
            rejected[offer.id] = [
                f"{offer.rack_kw:g} kW {offer.cooling} racks ({offer.fabric} fabric) host "
                f"no allowed server of {w.name}"
            ]
    policy = b.policies[w.name]
    unmet = preferences.describe(w, drop, charged, policy, b.catalog, rejected)
    b.owned = [_strip_owned(b, o, drop) if o.workload == w.name else o for o in b.owned]
    b.cloud = [_strip_cloud(b, c, drop) if c.workload == w.name else c for c in b.cloud]
    b.bursts = [_strip_cloud(b, c, drop) if c.workload == w.name else c for c in b.bursts]
    return unmet


def _strip_owned(
    b: Builder, option: ir.OwnedOption, drop: frozenset[preferences.Key]
) -> ir.OwnedOption:
    meta = b.meta[option.key]
    kept = preferences.without(meta.charges, drop)
    sites = {k: preferences.without(v, drop) for k, v in meta.site_charges.items()}
    b.meta[option.key] = dataclasses.replace(meta, charges=kept, site_charges=sites)
    placements = tuple(
        dataclasses.replace(
            p,
            penalty=sum(c.amount for c in sites.get(p.site, ())),
            penalty_shares=share_terms(sites.get(p.site, ())),
        )
        for p in option.placements
    )
    return dataclasses.replace(
        option,
        penalty=sum(c.amount for c in kept),
        penalty_shares=share_terms(kept),
        placements=placements,
    )


def _strip_cloud(
    b: Builder, option: ir.CloudOption, drop: frozenset[preferences.Key]
) -> ir.CloudOption:
    meta = b.meta[option.key]
    kept = preferences.without(meta.charges, drop)
    b.meta[option.key] = dataclasses.replace(meta, charges=kept)
    return dataclasses.replace(
        option, penalty=sum(c.amount for c in kept), penalty_shares=share_terms(kept)
    )
