"""Compare colocation offers for a fleet of owned servers: can each host it, how many
racks, what it costs per month and over the horizon, and why not.

The packing of each offer is solved exactly with the planner's own optimiser (one site,
one fixed option per fleet line), so racks and fills match what `plan` would produce.
Each fleet line at each offer is judged by the placement rules `plan` applies
(placement.py): a failed `require` refuses the offer, a missed `prefer` adds its penalty,
and offers are ranked like plans, by TCO + penalties.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.candidates.market import (
    MarketView,
    compliance_lines,
    exclusions,
    market_view,
    purchase_block,
)
from gpusolve.candidates.owned import move_cost, paid_rack_months, with_contracts
from gpusolve.candidates.reserve import rack_reserve
from gpusolve.colo.placement import PlacementRules, judge, line_layout, placement_rules
from gpusolve.models.catalog import Catalog, ColoOffer, Server
from gpusolve.models.colo import ColoReport, ColoRow, ColoRuleHit, RuleNotJudged
from gpusolve.models.fleet import Fleet, FleetItem
from gpusolve.models.money import energy_per_server_month, to_money
from gpusolve.models.plan import ComplianceLine
from gpusolve.models.regions import resolve
from gpusolve.optimize import ir
from gpusolve.rules.loader import RuleSet

RDMA = frozenset({"infiniband", "roce"})


def compare_offers(
    fleet: Fleet, catalog: Catalog, config: ir.SolveConfig, ruleset: RuleSet | None = None
) -> ColoReport:
    """Every colo offer for `fleet`, ranked by TCO + penalties; `ruleset` defaults to the
    shipped rules (the command passes the shipped ones plus `--rules`)."""
    if ruleset is None:
        from gpusolve.rules.loader import load_ruleset

        ruleset = load_ruleset([])
    rules = placement_rules(ruleset, catalog)
    fleet = with_owned(fleet)
    servers = {item.server: catalog.servers[item.server] for item in fleet.servers}
    counts: dict[str, int] = {}
    for item in fleet.servers:
        counts[item.server] = counts.get(item.server, 0) + item.count
    power_kw = sum(servers[s].power_kw * n for s, n in counts.items())
    rows = [
        _row(fleet, catalog, servers, offer, config, rules)
        for offer in catalog.colo_offers.values()
    ]
    rows.sort(key=lambda r: (not r.feasible, r.objective or 0.0, r.offer))
    view = market_view(catalog, fleet.market, fleet.regions, fleet.allow_restricted, fleet.owned)
    return ColoReport(
        market=view.market,
        market_basis=view.basis,
        compliance=fleet_compliance(fleet, catalog, view),
        # The fleet's own servers the market keeps from being bought (`plan` lists all).
        excluded=[e for e in exclusions(catalog, view) if e.item in servers],
        currency=fleet.currency,
        horizon_months=fleet.horizon_months,
        fleet=counts,
        fleet_power_kw=round(power_kw, 2),
        offers=rows,
        rules_judged=list(rules.judged),
        rules_not_judged=[
            RuleNotJudged(rule=k.rule, source=k.source, why=k.why) for k in rules.skipped
        ],
    )


def with_owned(fleet: Fleet) -> Fleet:
    """The fleet with its owned servers (`owned:`) as lines of their own: they are hosted
    like the others; the offers holding contracted racks pay less for them (`_instance`)."""
    if not fleet.owned.servers:
        return fleet
    lines = [FleetItem(server=s.server, count=s.count) for s in fleet.owned.servers]
    return fleet.model_copy(update={"servers": [*fleet.servers, *lines]})


def fleet_compliance(fleet: Fleet, catalog: Catalog, view: MarketView) -> list[ComplianceLine]:
    """The compliance lines `plan` prints, for the fleet's cards: owned servers are "owned"
    (export rules restrict sales, not stock held); the others are bought, or "to buy" where
    the market forbids buying them."""
    owned = {s.server for s in fleet.owned.servers}
    listed = {item.server for item in fleet.servers} - owned
    uses = [(catalog.servers[k].card, "owned") for k in sorted(owned)]
    for k in sorted(listed):
        server = catalog.servers[k]
        blocked = purchase_block(catalog.cards[server.card], server, view) is not None
        uses.append((server.card, "to buy" if blocked else "bought"))
    return compliance_lines(uses, catalog, view)


def rule_hits(
    fleet: Fleet, servers: dict[str, Server], offer: ColoOffer, rules: PlacementRules
) -> list[ColoRuleHit]:
    """The placement rules that fire on each fleet line at `offer`, as `plan` judges them."""
    out: list[ColoRuleHit] = []
    for item in fleet.servers:
        server = servers[item.server]
        verdict = judge(rules, server, offer, line_layout(server, item.count, item.multi_node))
        # (rule, source, effect, judged, reason, amount): a require refuses, a prefer charges.
        fired = [
            (h.rule, h.source, "refused", "offer", h.detail or h.title, 0.0) for h in verdict.failed
        ]
        fired += [
            (c.rule, c.source, "penalty", c.judged, c.reason, float(c.amount))
            for c in verdict.charged
        ]
        out += [
            ColoRuleHit(
                rule=r, source=s, effect=e, server=server.id, judged=j, reason=why, amount=a
            )
            for r, s, e, j, why, a in fired
        ]
    return out


def _reasons(fleet: Fleet, servers: dict[str, Server], offer: ColoOffer) -> list[str]:
    """Hard reasons this offer cannot host the fleet at all."""
    out = []
    reserve = rack_reserve(offer)
    usable_kw = reserve.usable_w / 1000
    for item in fleet.servers:
        s = servers[item.server]
        if offer.cooling not in s.cooling:
            out.append(f"{s.id} needs {' or '.join(s.cooling)} racks; these are {offer.cooling}")
        if s.power_kw > usable_kw:
            out.append(
                f"one {s.id} draws {s.power_kw:g} kW; a {offer.rack_kw:g} kW rack may draw "
                f"{usable_kw:g} kW continuously"
            )
        if s.rack_units > reserve.usable_units:
            out.append(
                f"{s.id} is {s.rack_units}U; racks are {offer.rack_units}U with "
                f"{reserve.reserved_units}U reserved"
            )
        if item.multi_node and offer.fabric not in RDMA:
            out.append(f"{s.id} x{item.count} run as one job and need InfiniBand or RoCE")
    if fleet.fabric is not None and fleet.fabric != "none" and offer.fabric != fleet.fabric:
        out.append(f"the fleet needs a {fleet.fabric} fabric; the site has {offer.fabric}")
    if fleet.need_ops_24h and not offer.ops_24h:
        out.append("no 24-hour on-site operations (H37)")
    if fleet.need_dual_power and not offer.dual_power:
        out.append("no dual power feed (H22)")
    if fleet.regions:
        places = [resolve(t, frozenset({offer.region})) for t in fleet.regions]
        if not any(p is not None and p.matches(offer.region, offer.city) for p in places):
            out.append(f"{offer.city} ({offer.region}) is outside {', '.join(fleet.regions)}")
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Moves:
    """The owned servers that move to an offer: what it costs, how many, the longest
    time one is out of service, and the lines that may not move (reasons)."""

    cost: int = 0
    servers: int = 0
    downtime_days: float = 0.0
    pinned: tuple[str, ...] = ()


def _moves(fleet: Fleet, offer: ColoOffer) -> Moves:
    """Owned servers held at another site move here at their move cost and downtime (as
    `plan` moves them: `candidates/owned.move_cost`), or cannot come."""
    away = [held for held in fleet.owned.servers if held.site != offer.id]
    each = [(held, move_cost(held, fleet.currency)) for held in away]
    moving = [(held, cost) for held, cost in each if cost is not None]
    return Moves(
        cost=sum(cost * held.count for held, cost in moving),
        servers=sum(held.count for held, _ in moving),
        downtime_days=max((held.move_downtime_days for held, _ in moving), default=0.0),
        pinned=tuple(
            f"the owned {held.server} at {held.site} stay there (not movable)"
            for held, cost in each
            if cost is None
        ),
    )


def _notes(offer: ColoOffer) -> list[str]:
    notes = []
    if "IDC" not in offer.licences:
        notes.append("no IDC licence: risk of forced shutdown (H19)")
    if not offer.ops_24h:
        notes.append("no 24-hour on-site operations (H37)")
    if not offer.dual_power:
        notes.append("single power feed")
    if not offer.bgp:
        notes.append("no BGP multi-line (H36)")
    return notes


def _instance(
    fleet: Fleet, servers: dict[str, Server], offer: ColoOffer
) -> tuple[ir.Instance, int, int]:
    energy = {
        s.id: energy_per_server_month(
            s.power_kw,
            fleet.utilisation,
            offer.pue,
            offer.power_price_per_kwh,
            offer.power_included,
        )
        for s in servers.values()
    }
    bandwidth = to_money(fleet.bandwidth_mbps * offer.bandwidth_price_per_mbps_month)
    reserve = rack_reserve(offer)
    site = ir.Site(
        id=offer.id,
        region=offer.region,
        cooling=offer.cooling,
        rack_w=reserve.usable_w,  # servers pack into what the rack reserve leaves
        rack_units=reserve.usable_units,
        racks_available=offer.racks_available,
        rack_rent_month=to_money(offer.rack_price_per_month),
        bandwidth_month=bandwidth,
        energy_month=energy,
    )
    skus = {
        s.id: ir.Sku(s.id, 0, round(s.power_kw * 1000), s.rack_units, frozenset(s.cooling))
        for s in servers.values()
    }
    owned = tuple(
        ir.OwnedOption(
            key=f"line{i}",
            workload=f"line{i}",
            sku=item.server,
            servers=item.count,
            slot="always",
            placements=(ir.Placement(offer.id),),
        )
        for i, item in enumerate(fleet.servers)
    )
    instance = ir.Instance(
        workloads=tuple(o.workload for o in owned),
        skus=skus,
        sites={offer.id: site},
        owned=owned,
        cloud=(),
        horizon_months=fleet.horizon_months,
    )
    instance = with_contracts(instance, fleet.owned)
    energy_month = sum(energy[item.server] * item.count for item in fleet.servers)
    return instance, energy_month, bandwidth


def _row(
    fleet: Fleet,
    catalog: Catalog,
    servers: dict[str, Server],
    offer: ColoOffer,
    config: ir.SolveConfig,
    rules: PlacementRules,
) -> ColoRow:
    from gpusolve.optimize.solve import solve

    base = ColoRow(
        offer=offer.id,
        provider=offer.provider,
        region=offer.region,
        city=offer.city,
        cooling=offer.cooling,
        rack_kw=offer.rack_kw,
        reserved_kw=round(offer.rack_kw - rack_reserve(offer).usable_w / 1000, 3),
        feasible=False,
        notes=_notes(offer),
        racks_available=offer.racks_available,
        pue=offer.pue,
        power_price_per_kwh=offer.power_price_per_kwh,
        latency_ms_to_shanghai=offer.latency_ms_to_shanghai,
    )
    hits = rule_hits(fleet, servers, offer, rules)
    penalties = sum(h.amount for h in hits)
    base = base.model_copy(update={"rules": hits, "penalties": penalties})
    refused = [
        f"{h.server}: rule {h.rule} ({h.source}) refuses it: {h.reason}"
        for h in hits
        if h.effect == "refused"
    ]
    moves = _moves(fleet, offer)
    reasons = _reasons(fleet, servers, offer) + list(dict.fromkeys(refused)) + list(moves.pinned)
    if reasons:
        return base.model_copy(update={"reasons": reasons})
    instance, energy_month, bandwidth_month = _instance(fleet, servers, offer)
    solution = solve(instance, config)
    if solution.status == "unknown":  # out of time: not proven impossible
        return base.model_copy(
            update={
                "timed_out": True,
                "reasons": [
                    f"no packing found within {config.time_limit_s:g} s (not proven impossible)"
                ],
            }
        )
    if solution.costs is None or solution.status not in ("optimal", "feasible"):
        return base.model_copy(
            update={"reasons": [f"needs more than the {offer.racks_available} racks available"]}
        )
    racks = sum(n for (_, _), n in solution.racks.items())
    fill = [dict(p) for (_, p), n in sorted(solution.racks.items()) for _ in range(n)]
    # Contracted racks are paid for their term: the horizon's rent, averaged per month.
    h = fleet.horizon_months
    paid = paid_rack_months(instance, solution.racks)
    rent = (racks * h - paid) * offer.rack_price_per_month / h
    monthly = rent + energy_month + bandwidth_month
    return base.model_copy(
        update={
            "feasible": True,
            "racks": racks,
            "fill": fill,
            "rack_rent_month": round(rent, 2),
            "energy_month": float(energy_month),
            "bandwidth_month": float(bandwidth_month),
            "monthly": round(monthly, 2),
            "moves": float(moves.cost),
            "servers_moved": moves.servers,
            "move_downtime_days": moves.downtime_days,
            "tco": round(monthly * fleet.horizon_months + moves.cost, 2),
            "objective": round(monthly * fleet.horizon_months + moves.cost + penalties, 2),
        }
    )
