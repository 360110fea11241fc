"""The objective's parts line by line, and two plans compared figure by figure.

Every amount is the optimiser's own integer (whole units of the run currency over the
horizon), recomputed from the plan's counts and the instance's coefficients, so the lines
of a kind add up to its total exactly as printed and the totals equal what the solver
minimised. Soft-rule penalties are listed apart from the TCO: they steer the choice and
are never spent. A delta between two plans is the difference of their printed figures and
is worded by its sign ("dearer by X" / "cheaper by X"), never with a signed number.
"""

from __future__ import annotations

from collections import defaultdict

from gpusolve.candidates.generate import Candidates
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import (
    Cost,
    CostBreakdown,
    CostItem,
    CostKind,
    Deployment,
    PenaltyItem,
    PlanDelta,
    ThroughputDelta,
)
from gpusolve.network_lines import network_items
from gpusolve.optimize import ir

KINDS: tuple[CostKind, ...] = (
    "servers_capex",
    "rack_rent",
    "energy",
    "bandwidth",
    "cloud_rental",
    "network",
)
CAPEX_KINDS: tuple[CostKind, ...] = ("servers_capex", "network")


def cost_items(
    solution: ir.Solution, instance: ir.Instance, cand: Candidates, catalog: Catalog
) -> list[CostItem]:
    """Capex per (SKU, site), rent, energy and bandwidth per site, rental per cloud option."""
    h = instance.horizon_months
    items: list[CostItem] = []
    for (sku, site), n in sorted(solution.servers.items()):
        price = instance.skus[sku].capex
        detail = f"{n} at {site} x {price:,}"
        items.append(CostItem(kind="servers_capex", subject=sku, detail=detail, amount=n * price))
    racks: dict[str, int] = defaultdict(int)
    for (site, _fill), count in solution.racks.items():
        racks[site] += count
    for site_id in sorted(racks):
        rent = instance.sites[site_id].rack_rent_month
        amount = h * rent * racks[site_id]
        detail = f"{racks[site_id]} rack(s) x {rent:,}/month x {h} months"
        items.append(CostItem(kind="rack_rent", subject=site_id, detail=detail, amount=amount))
    items += _energy(solution, instance)
    used = sorted({c.site for c in solution.choices if c.site is not None})
    for site_id in used:
        month = instance.sites[site_id].bandwidth_month
        detail = f"{month:,}/month x {h} months"
        items.append(CostItem(kind="bandwidth", subject=site_id, detail=detail, amount=h * month))
    cloud = {c.key: c for c in instance.cloud}
    for choice in solution.choices:
        option = cloud.get(choice.option)
        if option is None:
            continue
        meta = cand.meta[choice.option]
        offer = catalog.cloud_offers.get(option.offer)
        per_hour = f" x {offer.price_per_hour:,.2f}/h" if offer is not None else ""
        hours = f"{meta.rental_hours:,.1f} h{per_hour}"
        detail = f"{choice.workload}: {option.instances} instance(s) x {hours}"
        items.append(
            CostItem(
                kind="cloud_rental", subject=option.offer, detail=detail, amount=option.cost_total
            )
        )
    items = [i for i in items if i.amount]
    # Network lines stay even at no cost: NICs inside a server's price are still parts.
    return items + network_items(solution, instance, catalog)


def _energy(solution: ir.Solution, instance: ir.Instance) -> list[CostItem]:
    h = instance.horizon_months
    per_site: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for (sku, site), n in sorted(solution.servers.items()):
        per_site[site].append((sku, n, instance.sites[site].energy_month.get(sku, 0)))
    out = []
    for site_id, rows in sorted(per_site.items()):
        amount = sum(h * n * month for _, n, month in rows)
        parts = " + ".join(f"{n} x {sku} x {month:,}/month" for sku, n, month in rows)
        detail = f"({parts}) x {h} months" if len(rows) > 1 else f"{parts} x {h} months"
        out.append(CostItem(kind="energy", subject=site_id, detail=detail, amount=amount))
    return out


def penalty_items(solution: ir.Solution, cand: Candidates) -> list[PenaltyItem]:
    """Each soft-rule charge of each chosen option and of its placement."""
    out: list[PenaltyItem] = []
    for choice in solution.choices:
        meta = cand.meta[choice.option]
        charges = meta.charges
        if choice.site is not None:
            charges += meta.site_charges.get(choice.site, ())
        where = deployment_label(meta.nodes, meta.server, meta.cloud_offer, choice.site)
        out += [
            PenaltyItem(
                rule=c.rule,
                source=c.source,
                reason=c.reason,
                judged=c.judged,
                workload=choice.workload,
                deployment=where,
                amount=float(c.amount),
            )
            for c in charges
        ]
    return out


def deployment_label(nodes: int, server: str | None, offer: str | None, site: str | None) -> str:
    if server is None:
        return f"{nodes} x cloud {offer}"
    return f"{nodes} x {server}" + (f" at {site}" if site else "")


def cost(solution: ir.Solution, cand: Candidates, currency: str, catalog: Catalog) -> Cost | None:
    """The plan's cost, itemised; totals are the sums of their lines."""
    if solution.costs is None:
        return None
    instance = cand.instance
    items = cost_items(solution, instance, cand, catalog)
    penalties = penalty_items(solution, cand)
    total = {k: sum(i.amount for i in items if i.kind == k) for k in KINDS}
    tco = sum(total.values())
    penalty_total = sum(p.amount for p in penalties)
    months = instance.horizon_months
    capex = sum(total[k] for k in CAPEX_KINDS)
    opex = tco - capex
    return Cost(
        capex=capex,
        monthly_opex=round(opex / months, 2),
        tco=tco,
        currency=currency,
        horizon_months=months,
        breakdown=CostBreakdown(
            servers_capex=total["servers_capex"],
            rack_rent=total["rack_rent"],
            energy=total["energy"],
            bandwidth=total["bandwidth"],
            cloud_rental=total["cloud_rental"],
            network=total["network"],
            penalties=penalty_total,
            items=items,
            penalty_items=penalties,
        ),
        penalties=penalty_total,
        objective_value=tco + penalty_total,
    )


# --------------------------------------------------------------------------- deltas


def printed_throughput(d: Deployment) -> int:
    """Throughput as the renderers print it (whole tokens/s), so deltas add up as read."""
    return int(f"{d.throughput:.0f}")


def throughput_unit(d: Deployment) -> str:
    return "tokens/s" if d.time_to_train_h is not None else "generated tokens/s"


def compare(
    objective: str,
    chosen: Cost,
    chosen_deployments: list[Deployment],
    other: Cost,
    other_deployments: list[Deployment],
) -> PlanDelta:
    """`other` minus `chosen`, figure by figure, with the words to print."""
    mine = {d.workload: d for d in chosen_deployments}
    throughput = [
        ThroughputDelta(
            workload=d.workload,
            delta=printed_throughput(d) - printed_throughput(mine[d.workload]),
            unit=throughput_unit(d),
        )
        for d in other_deployments
        if d.workload in mine
    ]
    tco = other.tco - chosen.tco
    penalties = other.penalties - chosen.penalties
    money_words = [
        change("TCO", tco, chosen.currency, ("dearer", "cheaper")),
        change("penalties", penalties, chosen.currency, ("higher", "lower")),
    ]
    if objective == "max-throughput":
        words = [
            change(f"{t.workload} throughput", t.delta, t.unit, ("higher", "lower"))
            for t in throughput
        ]
        summary = "; ".join(words + money_words)
    else:
        total = change("TCO + penalties", tco + penalties, chosen.currency, ("dearer", "cheaper"))
        summary = "; ".join([*money_words, total])
    return PlanDelta(
        tco=tco,
        penalties=penalties,
        objective_value=tco + penalties,
        throughput=throughput,
        summary=summary,
    )


def change(label: str, value: float, unit: str, words: tuple[str, str]) -> str:
    """'TCO dearer by 1,234 CNY' / 'TCO cheaper by 1,234 CNY' / 'TCO unchanged': the sign
    chooses the word, so the number printed is never negative."""
    if value == 0:
        return f"{label} unchanged"
    word = words[0] if value > 0 else words[1]
    return f"{label} {word} by {abs(value):,.0f} {unit}"
