"""Deployment options for every workload: owned servers at colo sites, or cloud rentals.

Normal mode keeps only options that satisfy every requirement; explain mode also keeps
the best option that breaks each requirement, tagged with the requirement's name, so the
optimiser can say which requirements conflict.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusolve.candidates import preferences
from gpusolve.candidates.delivery import with_bridges
from gpusolve.candidates.layout_memo import layouts
from gpusolve.candidates.margin import held_back, margin_miss
from gpusolve.candidates.margin import sized as with_margins
from gpusolve.candidates.network import (
    fabric_class,
    nic_capex,
    rack_network,
    servers_per_rack,
    storage_kinds,
    storage_need_gb,
)
from gpusolve.candidates.owned import contracted_sites, with_inventory
from gpusolve.candidates.reserve import RackReserve, rack_reserve
from gpusolve.estimate import ConfigEstimate, Hardware
from gpusolve.estimate.search import SearchResult
from gpusolve.models.catalog import Card, Catalog, CloudOffer, ColoOffer, Server
from gpusolve.models.money import slot_hours_per_month, to_money
from gpusolve.models.params import Params
from gpusolve.models.plan import MarginMiss, UnmetPreference
from gpusolve.models.policy import Charge, Penalty, WorkloadPolicy, charges, share_terms
from gpusolve.models.regions import Place, resolve
from gpusolve.models.requirements import Requirements, Workload
from gpusolve.optimize import finance, ir

MULTI_NODE_FABRICS = frozenset({"infiniband", "roce"})


@dataclass(frozen=True)
class OptionMeta:
    """Everything needed to render or explain one option (the IR carries only numbers)."""

    key: str
    workload: str
    mode: str  # "owned" | "cloud"
    card: str
    server: str | None
    cloud_offer: str | None
    nodes: int
    estimate: ConfigEstimate
    rental_hours: float = 0.0
    # Soft-rule penalties by rule: the option's own, and per site those of its placement
    # there; they sum to the IR's `penalty` (+ `Placement.penalty`).
    charges: tuple[Charge, ...] = ()
    site_charges: dict[str, tuple[Charge, ...]] = field(default_factory=dict)
    # Owned: hours the workload runs over the horizon, and the power each server draws then
    # and when idle (`finance.py`).
    busy_hours: float = 0.0
    busy_kw: float = 0.0
    idle_kw: float = 0.0
    # Cloud: the price tier the rental is charged at, per instance.
    rental_tier: finance.Tier | None = None
    lead_time_weeks: float = 0.0  # owned: weeks from order to a working server


@dataclass
class Rejection:
    workload: str
    candidate: str  # server, cloud offer or colo offer id
    reasons: list[str]


@dataclass
class Candidates:
    instance: ir.Instance
    meta: dict[str, OptionMeta]
    rejections: dict[str, list[Rejection]]
    explain: bool
    # The residual value's share and the plan-level finance parameters (`finance.py`).
    residual_share: float = 0.0
    finance_terms: finance.Terms = field(default_factory=finance.Terms)
    # Price multipliers for VAT on goods and on services (1.0 without VAT).
    vat_goods: float = 1.0
    vat_services: float = 1.0
    # Preferences no allowed option of a workload meets: charged nowhere (`preferences.py`).
    unmet: list[UnmetPreference] = field(default_factory=list)
    # Candidates the margin alone keeps out (`margin.py`): the plan says so.
    margin_misses: list[MarginMiss] = field(default_factory=list)

    def workloads_without_options(self) -> list[str]:
        have = {o.workload for o in self.instance.owned} | {o.workload for o in self.instance.cloud}
        return [w for w in self.instance.workloads if w not in have]

    def scope(self) -> dict[str, int]:
        """Over what a proof of optimality holds: the options built, and the workloads
        they serve (the SolverInfo fields of the same names)."""
        inst = self.instance
        served = {o.workload for o in inst.owned} | {o.workload for o in inst.cloud}
        return {
            "candidate_layouts": len(inst.owned) + len(inst.cloud),
            "candidate_workloads": len(served),
        }


@dataclass
class _Builder:
    reqs: Requirements
    catalog: Catalog
    policies: dict[str, WorkloadPolicy]
    explain: bool
    owned: list[ir.OwnedOption] = field(default_factory=list)
    cloud: list[ir.CloudOption] = field(default_factory=list)
    meta: dict[str, OptionMeta] = field(default_factory=dict)
    rejections: dict[str, list[Rejection]] = field(default_factory=dict)
    terms: finance.Terms = field(default_factory=finance.Terms)
    requirements: dict[str, ir.Requirement] = field(default_factory=dict)
    reserves: dict[str, RackReserve] = field(default_factory=dict)  # colo offer id -> rack
    # Each workload's deadline as written (the options are sized to it less the margin).
    written_deadline: dict[str, float | None] = field(default_factory=dict)
    # Candidates whose fastest layout meets a deadline as written, not with its margin.
    margin_misses: list[MarginMiss] = field(default_factory=list)
    # Per workload: what each allowed option misses, with its card (`ir.Instance.missed`).
    missed: dict[str, frozenset[tuple[str, frozenset[preferences.Key]]]] = field(
        default_factory=dict
    )

    def require(self, name: str, description: str, weight: int) -> str:
        self.requirements.setdefault(name, ir.Requirement(name, description, weight))
        return name

    def reject(self, workload: str, candidate: str, reasons: Iterable[str]) -> None:
        rejection = Rejection(workload, candidate, list(reasons))
        mine = self.rejections.setdefault(workload, [])
        if rejection not in mine:  # several layout sizes of one candidate can say the same
            mine.append(rejection)


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
    b = _Builder(reqs, catalog, policies, explain)
    b.written_deadline = written
    b.terms = finance_terms(reqs, policies)
    chosen = [p.params for p in policies.values()]
    b.reserves = {o.id: rack_reserve(o, chosen) for o in catalog.colo_offers.values()}
    unmet: list[UnmetPreference] = []
    for workload in reqs.workloads:
        _owned_options(b, workload)
        _cloud_options(b, workload)
        unmet += _drop_unmeetable(b, workload, (elsewhere or {}).get(workload.name, ()))
    sites = contracted_sites(_sites(b), reqs)
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
    instance = with_bridges(instance)
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
    b: _Builder, w: Workload, elsewhere: Sequence[frozenset[preferences.Key]] = ()
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
        if not _region_ok(b.reqs, w, offer.region, offer.city):
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
    return unmet


def _strip_owned(
    b: _Builder, option: ir.OwnedOption, drop: frozenset[preferences.Key]
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
    b: _Builder, option: ir.CloudOption, drop: frozenset[preferences.Key]
) -> ir.CloudOption:
    meta = b.meta[option.key]
    kept = preferences.without(meta.charges, drop)
    b.meta[option.key] = dataclasses.replace(meta, charges=kept)
    return dataclasses.replace(
        option, penalty=sum(c.amount for c in kept), penalty_shares=share_terms(kept)
    )


def vat_factors(reqs: Requirements) -> tuple[float, float]:
    """(goods, services) price multipliers: 1 + VAT when the requirements add it."""
    vat = reqs.finance.vat
    if vat is None:
        return 1.0, 1.0
    return 1.0 + vat.goods, 1.0 + vat.services


def finance_terms(
    reqs: Requirements, policies: Mapping[str, WorkloadPolicy] | None = None
) -> finance.Terms:
    """The plan-level finance parameters: the requirements' `finance:` where it sets them,
    else the rules' parameters, the most cautious over the workloads when rules set them
    differently (the most idle power, the shortest life, the least salvage)."""
    params = [p.params for p in (policies or {}).values()] or [Params()]
    f = reqs.finance
    salvage = min(p.server_salvage_fraction for p in params)
    return finance.Terms(
        idle_power_fraction=max(p.idle_power_fraction for p in params),
        useful_life_months=f.useful_life_months or min(p.server_useful_life_months for p in params),
        salvage_fraction=salvage if f.salvage_fraction is None else f.salvage_fraction,
        residual_value=f.residual_value,
        resale_curve=tuple((p.month, p.fraction) for p in f.resale_curve or ()),
    )


def residual_share(reqs: Requirements, terms: finance.Terms) -> float:
    """Share of its price an owned server is credited at the end of the horizon (0 when
    the requirements leave residual value out, the default)."""
    return finance.credit_fraction(reqs.horizon_months, terms)


# --- owned servers ---------------------------------------------------------------


@dataclass(frozen=True)
class _Sized:
    """One candidate (server SKU or cloud offer) sized for one workload, rules applied:
    the preferences it misses are priced once its cost is known (`_charged`)."""

    estimate: ConfigEstimate
    deployment: dict[str, Any]
    spans_servers: bool
    violates: frozenset[str]
    missed: tuple[tuple[str, Penalty], ...] = ()


def _charged(missed: Iterable[tuple[str, Penalty]], base: float) -> tuple[Charge, ...]:
    """The charges of the preferences an option misses, priced on its cost `base`."""
    out: tuple[Charge, ...] = ()
    for kind, penalty in missed:
        out += charges(kind, penalty, base)
    return out


def _size(
    b: _Builder,
    w: Workload,
    card: Card,
    kind: str,
    subject: Server | CloudOffer,
    hw: Hardware,
    max_nodes: int,
) -> list[_Sized]:
    """Rules on the card and the candidate, the layout search, then layout-level rules:
    every layout size that passes them (smallest first).

    Normal mode drops a candidate at the first failed rule (with the reason); explain mode
    keeps it, tagged with the requirements it breaks. A layout that fails a layout-level
    rule is dropped alone; the candidate is rejected (with the smallest layout's reasons)
    only when no layout is left.
    """
    policy = b.policies[w.name]
    context = {"workload": w}
    hits = policy.failed("card", card, context) + policy.failed(kind, subject, context)
    if hits and not b.explain:
        b.reject(w.name, subject.id, [h.sentence() for h in hits])
        return []
    result = layouts(w, hw, policy.params, max_nodes=max_nodes, every_size=True)
    out: list[_Sized] = []
    first_reasons: list[str] = []
    for estimate, deadline_tag in _pick(b, w, subject.id, result):
        mode = "owned" if kind == "server" else "cloud"
        spans = _needs_fabric(w, estimate, hw.gpus_per_node)
        deployment = layout_facts(estimate, w.schedule, mode, hw.gpus_per_node, spans)
        dep_context = {"workload": w, "card": card, kind: subject}
        dep_hits = policy.failed("deployment", deployment, dep_context)
        if dep_hits and not b.explain:
            first_reasons = first_reasons or [h.sentence() for h in dep_hits]
            continue
        tags = {_rule_requirement(b, h.rule, h.source, h.title) for h in [*hits, *dep_hits]}
        if deadline_tag:
            tags.add(deadline_tag)
        missed = [("deployment", policy.penalty("deployment", deployment, dep_context))]
        parts: tuple[tuple[str, Any], ...] = (("card", card), (kind, subject))
        missed += [(k, policy.penalty(k, item, context)) for k, item in parts]
        out.append(_Sized(estimate, deployment, spans, frozenset(tags), tuple(missed)))
    if not out and first_reasons:
        b.reject(w.name, subject.id, first_reasons)
    return out


def _owned_options(b: _Builder, w: Workload) -> None:
    params = b.policies[w.name].params
    for server in b.catalog.servers.values():
        card = b.catalog.cards[server.card]
        groups = _fabric_groups(b.catalog, server, b.reqs.network.oversubscription)
        for ratio, offers in groups:
            hw = Hardware.from_server(server, card).with_oversubscription(ratio)
            spans = w.is_training  # replicas behind a load balancer need no fabric
            limit = node_limit(server, offers, needs_fabric=spans, reserves=b.reserves)
            if not params.allow_multi_node:
                limit = 1
            for sized in _size(b, w, card, "server", server, hw, min(limit, params.max_nodes)):
                _add_owned(b, w, server, card, ratio, offers, sized)


def _add_owned(
    b: _Builder,
    w: Workload,
    server: Server,
    card: Card,
    ratio: float,
    offers: list[ColoOffer],
    sized: _Sized,
) -> None:
    site_charges: dict[str, tuple[Charge, ...]] = {}
    goods, _ = vat_factors(b.reqs)
    # A preference an owned option misses is priced on what its servers cost.
    base = sized.estimate.nodes * server.price * goods
    placements = _placements(
        b, w, server, sized.spans_servers, sized.deployment, offers, base, site_charges
    )
    if not placements:
        return
    charged = _charged(sized.missed, base)
    estimate = sized.estimate
    hours = owned_busy_hours(w, estimate, b.reqs.horizon_months)
    idle_kw = finance.idle_power_kw(
        server.power_kw, server.idle_power_kw, b.terms.idle_power_fraction
    )
    utilisation = w.utilisation if w.utilisation is not None else b.reqs.utilisation
    busy_kw = finance.busy_power_kw(server.power_kw, utilisation, idle_kw)
    placements = _with_busy_energy(b, estimate.nodes * (busy_kw - idle_kw) * hours, placements)
    key = f"{w.name}|{server.id}|{estimate.nodes}n"
    if ratio != 1.0:
        key += f"|os{ratio:g}"
    key = _unique_key(b, key)
    b.owned.append(
        ir.OwnedOption(
            key=key,
            workload=w.name,
            sku=server.id,
            servers=estimate.nodes,
            slot=w.schedule,
            placements=tuple(placements),
            throughput=max(0, round(estimate.tokens_per_s)),
            headroom_permille=_headroom_permille(estimate),
            penalty=sum(c.amount for c in charged),  # whole units: the charges add up
            violates=sized.violates,
            penalty_base=base,
            penalty_shares=share_terms(charged),
            spans=sized.spans_servers,
            # One server keeps its checkpoints on its own NVMe (H16); a job across servers
            # needs a filesystem they all reach.
            storage_gb=storage_need_gb(
                w.kind,
                estimate.checkpoint_bytes,
                b.policies[w.name].params.checkpoint_copies_kept,
                w.dataset_gb,
                b.policies[w.name].params.storage_fill_fraction,
            )
            if sized.spans_servers
            else 0,
            bandwidth_mbps=math.ceil(w.bandwidth_mbps or 0),
        )
    )
    b.meta[key] = OptionMeta(
        key,
        w.name,
        "owned",
        card.id,
        server.id,
        None,
        estimate.nodes,
        estimate,
        charges=charged,
        site_charges=site_charges,
        busy_hours=hours,
        busy_kw=busy_kw,
        idle_kw=idle_kw,
        lead_time_weeks=server.lead_time_weeks,
    )


def _with_busy_energy(
    b: _Builder, busy_kwh: float, placements: list[ir.Placement]
) -> list[ir.Placement]:
    """Each placement with what the option's servers draw above idle there while the
    workload runs (`busy_kwh` at the servers, before the site's PUE and tariff)."""
    goods, _ = vat_factors(b.reqs)
    out = []
    for p in placements:
        offer = b.catalog.colo_offers[p.site]
        price = goods * finance.energy_price_per_kwh(
            offer.pue, offer.power_price_per_kwh, offer.power_included
        )
        out.append(dataclasses.replace(p, busy_energy=finance.busy_energy(busy_kwh, price)))
    return out


def _unique_key(b: _Builder, key: str) -> str:
    """`key`, or `key|v2`, `key|v3` ... when another layout of the same size (an inference
    replica shape) already took it: the first layout keeps the plain key."""
    if key not in b.meta:
        return key
    n = 2
    while f"{key}|v{n}" in b.meta:
        n += 1
    return f"{key}|v{n}"


def _fabric_groups(
    catalog: Catalog, server: Server, oversubscription: float = 1.0
) -> list[tuple[float, list[ColoOffer]]]:
    """Colo offers grouped by their fabric's oversubscription: the physics of a multi-node
    job differs between them, so each group is sized on its own (sites without an RDMA
    fabric host single-server layouts only and join the non-blocking group). The fabric
    the plan buys (`requirements.network.oversubscription`) is never better than the
    site's own."""
    groups: dict[float, list[ColoOffer]] = {}
    for offer in catalog.colo_offers.values():
        ratio = 1.0
        if offer.fabric in MULTI_NODE_FABRICS:
            ratio = max(offer.fabric_oversubscription, oversubscription)
        groups.setdefault(ratio, []).append(offer)
    return sorted(groups.items()) or [(1.0, [])]


def node_limit(
    server: Server,
    offers: Iterable[ColoOffer],
    *,
    needs_fabric: bool = True,
    reserves: dict[str, RackReserve] | None = None,
) -> int:
    """How many of `server` one job may span: the most any of these sites holds (racks
    available × servers per rack within its kW and U), on one RDMA fabric capped by its size
    limit when the job needs one. A site's capacity, not a constant, bounds a job (H21
    prefers one node; the layout search and the optimiser weigh more nodes)."""
    best = 1
    for offer in offers:
        reserve = reserves.get(offer.id) if reserves is not None else None
        if _cannot_host(server, offer, needs_fabric=needs_fabric, reserve=reserve):
            continue
        kw, units = _usable(offer, reserve)
        per_rack = min(int(kw // server.power_kw), units // server.rack_units)
        servers = offer.racks_available * per_rack
        if needs_fabric and offer.fabric_max_nodes is not None:
            servers = min(servers, offer.fabric_max_nodes)
        best = max(best, servers)
    return best


def _pick(
    b: _Builder, w: Workload, candidate: str, result: SearchResult
) -> list[tuple[ConfigEstimate, str | None]]:
    """Every layout size that meets the deadline (fewest nodes first): which one is
    cheapest depends on prices, penalties and what else shares the site, so the optimiser
    decides. In explain mode, when none meets it, the fastest, tagged with the deadline.

    The sizes are the search's grid (1, 2, 3, 4, 6, 8, 12 ... nodes) plus the fewest count
    that meets this deadline, bisected between two grid counts. A looser deadline bisects
    elsewhere, so a tighter deadline's bisected count (a rental on it could be a little
    cheaper than on the grid counts around it) is not always in the looser one's space:
    monotone in the deadline up to that count, which refining every grid gap would fix at
    several times the search's cost."""
    feasible = list(result.feasible)
    if not feasible:
        b.reject(w.name, candidate, list(result.rejections) or ["no layout fits in memory"])
        return []
    meeting = [e for e in feasible if e.meets_deadline]
    if meeting:
        return [(e, None) for e in sorted(meeting, key=lambda e: (e.nodes, -e.tokens_per_s))]
    fastest = max(feasible, key=lambda e: e.tokens_per_s)
    hours = (fastest.time_to_train_s or 0) / 3600
    stated, margin = _deadline_words(b, w)
    reason = (
        f"the fastest layout ({fastest.nodes} server(s), {fastest.gpus} GPUs) takes "
        f"{hours:,.1f} h, beyond the {stated}{margin}"
    )
    miss = margin_miss(w, candidate, fastest, b.written_deadline.get(w.name))
    if miss is not None:
        offer = b.catalog.cloud_offers.get(candidate)
        cost = _rental(b, w, offer, fastest)[2] if offer is not None else None
        b.margin_misses.append(miss.model_copy(update={"rental_cost": cost}))
    if not b.explain:
        b.reject(w.name, candidate, [reason, *result.rejections][:4])
        return []
    tag = b.require(f"deadline:{w.name}", f"{stated} for {w.name}{margin}", 4)
    return [(fastest, tag)]


def _deadline_words(b: _Builder, w: Workload) -> tuple[str, str]:
    """('deadline of 24 h' as written, ' (20.9 h with its margin)' where they differ)."""
    stated = b.written_deadline.get(w.name) or w.deadline_hours or 0.0
    sized = w.deadline_hours or 0.0
    margin = "" if abs(stated - sized) < 1e-9 else f" ({sized:,.1f} h with its margin)"
    return f"deadline of {stated:,.0f} h", margin


def layout_facts(
    estimate: ConfigEstimate, schedule: str, mode: str, gpus_per_node: int, spans_servers: bool
) -> dict[str, Any]:
    """The `deployment` variables rules can test, from one layout estimate.

    `multi_node` means one job (or one inference replica) spans servers and so needs a
    fabric; inference replicas spread over servers behind a load balancer do not.
    """
    layout = estimate.layout
    time_h = estimate.time_to_train_s / 3600 if estimate.time_to_train_s else None
    return {
        "mode": mode,
        "nodes": estimate.nodes,
        "gpus": estimate.gpus,
        "gpus_per_node": gpus_per_node,
        "tp": layout.tp,
        "pp": layout.pp,
        "dp": layout.dp,
        "vp": layout.vp,
        "cp": layout.cp,
        "ep": layout.ep,
        "zero_stage": layout.zero_stage,
        "sharding": layout.sharding,
        "checkpointing": layout.checkpointing,
        "replicas": layout.replicas,
        "memory_per_gpu_gb": estimate.memory_total_bytes / 1e9,
        "card_memory_gb": estimate.card_memory_bytes / 1e9,
        "usable_memory_gb": estimate.usable_memory_bytes / 1e9,
        "mfu": estimate.mfu,
        "comm_fraction": estimate.comm_fraction,
        "checkpoint_stall_fraction": estimate.checkpoint_stall_fraction,
        "time_to_train_h": time_h,
        "meets_deadline": bool(estimate.meets_deadline),
        "multi_node": spans_servers,
        "tokens_per_s": estimate.tokens_per_s,
        "bottleneck": estimate.bottleneck,
        "schedule": schedule,
    }


def _headroom_permille(estimate: ConfigEstimate) -> int:
    card_bytes = estimate.card_memory_bytes
    if card_bytes <= 0:
        return 0
    return max(0, round(1000 * (1 - estimate.memory_total_bytes / card_bytes)))


def _needs_fabric(w: Workload, estimate: ConfigEstimate, gpus_per_node: int) -> bool:
    """Training across servers needs RDMA; inference only when one replica spans servers
    (independent replicas behind a load balancer need no fabric, H27)."""
    if not w.is_training:
        # Disaggregated pools on separate servers send each prompt's KV cache over it.
        serving = estimate.serving
        pooled = serving is not None and serving.disaggregated is not None
        if pooled and estimate.nodes > 1:
            return True
        return bool(estimate.layout.tp * estimate.layout.pp > gpus_per_node)
    return bool(estimate.nodes > 1)


def _placements(
    b: _Builder,
    w: Workload,
    server: Server,
    needs_fabric: bool,
    deployment: dict[str, Any],
    offers: list[ColoOffer],
    base: float,
    site_charges: dict[str, tuple[Charge, ...]] | None = None,
) -> list[ir.Placement]:
    policy = b.policies[w.name]
    out: list[ir.Placement] = []
    physical: list[str] = []
    for offer in offers:
        why = _cannot_host(server, offer, needs_fabric, b.reserves.get(offer.id))
        if why:
            physical.append(f"{offer.id}: {why}")
            continue
        tags: set[str] = set()
        if not _region_ok(b.reqs, w, offer.region, offer.city):
            if not b.explain:
                continue
            tags.add(_region_requirement(b, w))
        context = {"workload": w, "deployment": deployment, "server": server}
        hits = policy.failed("offer", offer, context)
        if hits and not b.explain:
            continue
        tags |= {_rule_requirement(b, h.rule, h.source, h.title) for h in hits}
        charged = charges("offer", policy.penalty("offer", offer, context), base)
        if site_charges is not None:
            site_charges[offer.id] = charged
        out.append(
            ir.Placement(
                offer.id,
                sum(c.amount for c in charged),
                frozenset(tags),
                penalty_shares=share_terms(charged),
            )
        )
    if not out:
        if physical and len(physical) == len(offers):
            b.reject(w.name, server.id, ["no colo offer can host it: " + "; ".join(physical[:3])])
        else:
            b.reject(
                w.name,
                server.id,
                ["no colo offer that hosts it is allowed by the regions and site rules"],
            )
    return out


def _usable(offer: ColoOffer, reserve: RackReserve | None) -> tuple[float, int]:
    """kW and U of one rack that servers may use: the contracted figures without a reserve."""
    if reserve is None:
        return offer.rack_kw, offer.rack_units
    return reserve.usable_w / 1000, reserve.usable_units


def _cannot_host(
    server: Server, offer: ColoOffer, needs_fabric: bool, reserve: RackReserve | None = None
) -> str | None:
    """Physical reasons a site cannot take this server (not relaxable requirements)."""
    kw, units = _usable(offer, reserve)
    if offer.cooling not in server.cooling:
        return f"{offer.cooling} racks; the server needs {' or '.join(server.cooling)}"
    if server.power_kw > offer.rack_kw:
        return f"{offer.rack_kw:g} kW racks; one server draws {server.power_kw:g} kW"
    if server.power_kw > kw:
        return (
            f"{offer.rack_kw:g} kW racks of which {kw:g} kW may be drawn continuously; "
            f"one server draws {server.power_kw:g} kW"
        )
    if server.rack_units > offer.rack_units:
        return f"{offer.rack_units}U racks; the server is {server.rack_units}U"
    if server.rack_units > units:
        return (
            f"{offer.rack_units}U racks of which {units}U are free for servers; "
            f"the server is {server.rack_units}U"
        )
    if needs_fabric and offer.fabric not in MULTI_NODE_FABRICS:
        return f"a job across servers needs InfiniBand or RoCE; the site has {offer.fabric}"
    if needs_fabric and server.fabric.kind not in MULTI_NODE_FABRICS:
        return f"a job across servers needs RDMA NICs; the server has {server.fabric.kind}"
    return None


def _places(terms: list[str] | None, known: frozenset[str]) -> list[Place] | None:
    if not terms:
        return None
    return [p for p in (resolve(t, known) for t in terms) if p is not None]


def _region_ok(reqs: Requirements, w: Workload, region: str, city: str) -> bool:
    known = frozenset({region})
    for terms in (reqs.regions.allowed, w.regions):
        places = _places(terms, known)
        if places is not None and not any(p.matches(region, city) for p in places):
            return False
    return True


def _region_requirement(b: _Builder, w: Workload) -> str:
    terms = [*(b.reqs.regions.allowed or []), *(w.regions or [])]
    return b.require(f"regions:{w.name}", f"{w.name} limited to {', '.join(terms)}", 6)


def _rule_requirement(b: _Builder, rule: str, source: str, title: str) -> str:
    return b.require(f"rule:{rule}", f"rule {rule} ({source}: {title})", 5)


# --- cloud ------------------------------------------------------------------------


def _cloud_options(b: _Builder, w: Workload) -> None:
    params = b.policies[w.name].params
    for offer in b.catalog.cloud_offers.values():
        card = b.catalog.cards[offer.card]
        multi = offer.fabric in MULTI_NODE_FABRICS and params.allow_multi_node
        max_nodes = min(offer.max_instances, params.max_nodes) if multi else 1
        hw = Hardware.from_cloud(offer, card)
        for sized in _size(b, w, card, "cloud", offer, hw, max_nodes):
            _add_cloud(b, w, offer, card, sized)


def _add_cloud(b: _Builder, w: Workload, offer: CloudOffer, card: Card, sized: _Sized) -> None:
    tags = set(sized.violates)
    if not _region_ok(b.reqs, w, offer.region, ""):
        if not b.explain:
            b.reject(w.name, offer.id, [f"region {offer.region} is not allowed for {w.name}"])
            return
        tags.add(_region_requirement(b, w))
    estimate = sized.estimate
    hours, tier, cost_total = _rental(b, w, offer, estimate)
    key = _unique_key(b, f"{w.name}|cloud:{offer.id}|{estimate.nodes}i")
    # A preference a rental misses is priced on the rental over the horizon.
    charged = _charged(sized.missed, cost_total)
    b.cloud.append(
        ir.CloudOption(
            key=key,
            workload=w.name,
            offer=offer.id,
            region=offer.region,
            instances=estimate.nodes,
            cost_total=cost_total,
            throughput=max(0, round(estimate.tokens_per_s)),
            headroom_permille=_headroom_permille(estimate),
            penalty=sum(c.amount for c in charged),
            violates=frozenset(tags),
            penalty_shares=share_terms(charged),
        )
    )
    b.meta[key] = OptionMeta(
        key,
        w.name,
        "cloud",
        card.id,
        None,
        offer.id,
        estimate.nodes,
        estimate,
        hours,
        charges=charged,
        rental_tier=tier,
    )


def _rental(
    b: _Builder, w: Workload, offer: CloudOffer, estimate: ConfigEstimate
) -> tuple[float, finance.Tier, int]:
    """Renting `estimate`'s layout on `offer`: hours of use, the price tier, the whole cost
    over the horizon (VAT on services in)."""
    hours = rental_hours(w, estimate, b.reqs.horizon_months)
    _, services = vat_factors(b.reqs)
    tier = rental_tier(w, estimate, offer, hours, b.reqs.horizon_months)
    return hours, tier, to_money(estimate.nodes * tier.cost * services)


def rental_tier(
    w: Workload, estimate: ConfigEstimate, offer: CloudOffer, hours: float, horizon_months: int
) -> finance.Tier:
    """The cheapest price tier this rental's use allows, per instance (`finance.py`)."""
    continuous = not w.is_training or not estimate.time_to_train_s
    per_run = (estimate.time_to_train_s or 0) / 3600
    held, span = finance.rental_months(continuous, w.runs, per_run, horizon_months)
    reserved = [(r.term_months, r.price_per_month) for r in offer.reserved]
    tiers = finance.cloud_tiers(
        hours, offer.price_per_hour, offer.price_per_month, reserved, held, span
    )
    return finance.cheapest_tier(tiers)


def rental_hours(w: Workload, estimate: ConfigEstimate, horizon_months: int) -> float:
    """Training rents for the runs' duration; a service rents for every hour it is up."""
    if not w.is_training or not estimate.time_to_train_s:
        return slot_hours_per_month(w.schedule) * horizon_months
    return float(estimate.time_to_train_s / 3600 * w.runs)


def owned_busy_hours(w: Workload, estimate: ConfigEstimate, horizon_months: int) -> float:
    """Hours owned servers run this workload over the horizon, within its slot's hours."""
    return finance.busy_hours(
        rental_hours(w, estimate, horizon_months), slot_hours_per_month(w.schedule), horizon_months
    )


# --- sites ------------------------------------------------------------------------


def _sites(b: _Builder) -> dict[str, ir.Site]:
    skus: dict[str, set[str]] = defaultdict(set)  # site -> the server models placed there
    for o in b.owned:
        for p in o.placements:
            skus[p.site].add(o.sku)
    return {
        offer.id: price_site(
            offer, b.catalog, b.reqs, b.reserves.get(offer.id), b.terms, skus[offer.id]
        )
        for offer in b.catalog.colo_offers.values()
        if offer.id in skus
    }


def fabric_classes(
    catalog: Catalog, servers: Iterable[Server], reqs: Requirements
) -> dict[str, ir.FabricClass]:
    """The compute fabrics these servers' NICs join (`candidates/network.py`), by id."""
    goods, _ = vat_factors(reqs)
    out: dict[str, ir.FabricClass] = {}
    for server in servers:
        fabric = fabric_class(catalog, server, reqs.network.oversubscription, goods)
        if fabric is not None:
            out.setdefault(fabric.id, fabric)
    return out


def price_sku(
    server: Server,
    reqs: Requirements,
    catalog: Catalog,
    terms: finance.Terms | None = None,
) -> ir.Sku:
    """A server model as the optimiser prices it (VAT, residual value, the fabric its NICs
    join and the NICs it lacks): one place, so that every stage building an instance
    (scenarios, sensitivity) prices it the same way."""
    goods, _ = vat_factors(reqs)
    terms = terms or finance_terms(reqs)
    fabric = fabric_class(catalog, server, reqs.network.oversubscription, goods)
    return ir.Sku(
        id=server.id,
        capex=to_money(server.price * goods),
        power_w=round(server.power_kw * 1000),
        rack_units=server.rack_units,
        cooling=frozenset(server.cooling),
        residual=finance.residual_value(server.price * goods, residual_share(reqs, terms)),
        fabric=fabric.id if fabric is not None else None,
        nics=server.fabric.nics if fabric is not None else 0,
        nic_capex=nic_capex(catalog, server, goods),
        lead_time_days=round(server.lead_time_weeks * 7),
    )


def price_site(
    offer: ColoOffer,
    catalog: Catalog,
    reqs: Requirements,
    reserve: RackReserve | None = None,
    terms: finance.Terms | None = None,
    skus: Collection[str] | None = None,
    rack_servers: int | None = None,
) -> ir.Site:
    """A colo offer as the optimiser prices it: idle energy per server model (what each
    workload draws above idle is its placement's `busy_energy`), bandwidth, terms, VAT;
    racks hold servers within what the rack reserve leaves (`reserve.py`), and each its
    top-of-rack and management switches sized for the most servers of `skus` (every
    catalogue server when None) a rack holds, or for `rack_servers` where given, and its
    PDUs where the rent lacks them."""
    goods, services = vat_factors(reqs)
    fraction = (terms or finance_terms(reqs)).idle_power_fraction
    rack_w = reserve.usable_w if reserve else round(offer.rack_kw * 1000)
    rack_units = reserve.usable_units if reserve else offer.rack_units
    if rack_servers is None:
        models = [s for s in catalog.servers.values() if skus is None or s.id in skus]
        rack_servers = servers_per_rack(rack_w, rack_units, offer.cooling, models)
    # Each PDU feed carries the whole contracted rack alone (`network.PDU_FEEDS`).
    pdu_feed_w = 0 if offer.pdus_included else round(offer.rack_kw * 1000)
    own = rack_network(catalog, goods, rack_servers, pdu_feed_w)
    h = reqs.horizon_months
    price = goods * finance.energy_price_per_kwh(
        offer.pue, offer.power_price_per_kwh, offer.power_included
    )
    energy = {
        s.id: finance.idle_energy_month(
            finance.idle_power_kw(s.power_kw, s.idle_power_kw, fraction), price
        )
        for s in catalog.servers.values()
    }
    return ir.Site(
        id=offer.id,
        region=offer.region,
        cooling=offer.cooling,
        rack_w=rack_w,
        rack_units=rack_units,
        racks_available=offer.racks_available,
        rack_rent_month=to_money(offer.rack_price_per_month * services),
        bandwidth_month=to_money(
            offer.bandwidth_mbps * offer.bandwidth_price_per_mbps_month * services
        ),
        energy_month=energy,
        bandwidth_mbps=math.ceil(offer.bandwidth_mbps),
        extra_mbps_cost=to_money(h * offer.bandwidth_price_per_mbps_month * services),
        rent_months=max(h, offer.min_term_months or 0),
        setup_fee=to_money(offer.setup_fee * services),
        # The rack's reserve holds its own switches and PDUs, the fabric switches and
        # storage (`fabric.py`).
        reserved_w=reserve.reserved_w if reserve else 0,
        reserved_units=reserve.reserved_units if reserve else 0,
        rack_network_capex=own.capex,
        rack_servers=rack_servers,
        rack_network_w=own.power_w,
        rack_network_units=own.rack_units,
        pdu_feed_w=pdu_feed_w,
        storage=storage_kinds(catalog, goods),
    )
