"""The objective's parts line by line: the plan's cost, itemised.

Every amount is the optimiser's own integer (whole units of the run currency over the
horizon), recomputed from the plan's counts and the instance's coefficients, so the lines
of a kind add up to its total exactly as printed and the totals equal what the solver
minimised. Soft-rule penalties are listed apart from the TCO: they steer the choice and
are never spent. So is the resale credit (`finance.residual_value`): what the owned
servers would fetch at the horizon is money received after it, not a negative purchase, so
it stands beside the TCO (capex + opex) and only the objective subtracts it. Two plans are
compared in `compare.py`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import get_args

from gpusolve.candidates.delivery import bridging_rental, wait_for
from gpusolve.candidates.records import Candidates
from gpusolve.explain.leasing import financing_items
from gpusolve.explain.network_lines import network_items, storage_items
from gpusolve.models.catalog import Catalog
from gpusolve.models.common import PriceNote
from gpusolve.models.money import vat_note
from gpusolve.models.plan import (
    Cost,
    CostBreakdown,
    CostItem,
    CostKind,
    PenaltyItem,
    ResaleCredit,
    ResaleLine,
)
from gpusolve.optimize import finance, ir
from gpusolve.optimize.inventory import covered_racks, purchases
from gpusolve.optimize.validate import Placed, extra_mbps

KINDS: tuple[CostKind, ...] = get_args(CostKind)  # in the order the breakdown prints
CAPEX_KINDS: tuple[CostKind, ...] = ("servers_capex", "network", "storage")


def cost_items(
    solution: ir.Solution, instance: ir.Instance, cand: Candidates, catalog: Catalog
) -> list[CostItem]:
    """Capex per (SKU, site), rent, energy and bandwidth per site, rental per cloud option,
    network and storage: every line of the TCO (the resale credit is `resale_credit`)."""
    h = instance.horizon_months
    items: list[CostItem] = []
    held = {(s.sku, s.site) for s in instance.stock}
    bought = purchases(instance, solution.servers, solution.bought)
    for (sku, site), n in sorted(bought.items()):
        price = instance.skus[sku].capex
        server = catalog.servers.get(sku)
        note = server.pricing if server is not None else None
        # N+1: its own line, still capex (where servers are owned, the spare is one of them
        # or of those bought: no line of its own)
        spare = int(instance.spares) if (sku, site) not in held else 0
        detail = f"{n - spare} at {site} x {price:,}{vat_note(cand.vat_goods)}"
        amount = (n - spare) * price
        line = CostItem(kind="servers_capex", subject=sku, detail=detail, amount=amount)
        items.append(priced(line, n - spare, "server", price, note, site=site))
        if spare:
            detail = (
                f"1 spare (N+1) at {site} x {price:,}{vat_note(cand.vat_goods)}, racked and "
                "idle with the others"
            )
            line = CostItem(kind="servers_capex", subject=sku, detail=detail, amount=price)
            items.append(priced(line, 1, "spare server", price, note, site=site))
    racks: dict[str, int] = defaultdict(int)
    for (site, _fill), count in solution.racks.items():
        racks[site] += count
    covered = covered_racks(instance, solution.racks)
    for site_id in sorted(racks):
        rent = instance.sites[site_id].rack_rent_month
        months = finance.rent_months(h, instance.sites[site_id].rent_months)
        if covered.get(site_id):
            items += _renewal(instance, site_id, covered[site_id], cand, catalog)
        rented = racks[site_id] - covered.get(site_id, 0)
        if not rented:
            continue
        amount = months * rent * rented
        term = f" (the offer's minimum term; horizon {h})" if months > h else ""
        vat = vat_note(cand.vat_services)
        detail = f"{rented} rack(s) x {rent:,}/month{vat} x {months} months{term}"
        line = CostItem(kind="rack_rent", subject=site_id, detail=detail, amount=amount)
        note = colo_pricing(catalog, site_id)
        quantity = months * rented
        items.append(priced(line, quantity, "rack-month", rent, note, site=site_id))
    for site_id in sorted({c.site for c in solution.choices if c.site is not None}):
        fee = instance.sites[site_id].setup_fee
        if fee:
            detail = f"one-off set-up fee {fee:,}"
            line = CostItem(kind="rack_rent", subject=site_id, detail=detail, amount=fee)
            note = colo_pricing(catalog, site_id)
            items.append(priced(line, 1, "set-up fee", fee, note, site=site_id))
    items += _moves(solution, instance)
    items += _energy(solution, instance, cand, catalog)
    items += _bandwidth(solution, instance, cand, catalog)
    for choice, option in ir.rentals(solution, instance):
        items.append(_cloud_line(choice, option, cand, catalog))
    items += _until_delivery(solution, instance, catalog)
    items += financing_items(solution, instance)
    items = [i for i in items if i.amount]
    # Network lines stay even at no cost: NICs inside a server's price are still parts.
    return (
        items
        + network_items(solution, instance, catalog, cand.vat_goods)
        + storage_items(solution, instance, catalog, cand.vat_goods)
    )


def _moves(solution: ir.Solution, instance: ir.Instance) -> list[CostItem]:
    """Owned servers moved to another site: one line per move, at its cost per server."""
    each = {(s.sku, s.site): s.move_cost or 0 for s in instance.stock}
    out = []
    for (k, src, dst), n in sorted(solution.moved.items()):
        cost = each.get((k, src), 0)
        detail = f"move {n} owned {k} from {src}: {n} x {cost:,} (de-rack, freight, re-rack)"
        line = CostItem(kind="rack_rent", subject=dst, detail=detail, amount=n * cost)
        out.append(priced(line, n, "server moved", cost, None, site=dst))
    return out


def _until_delivery(
    solution: ir.Solution, instance: ir.Instance, catalog: Catalog
) -> list[CostItem]:
    """Workloads on servers with a lead time rent their cheapest rental until delivery,
    and those on owned servers moved to their site until the servers are there
    (`candidates/delivery.py`): one line each."""
    owned = {o.key: o for o in instance.owned}
    out = []
    for choice in solution.choices:
        option = owned.get(choice.option)
        if option is None:
            continue
        placement = next((p for p in option.placements if p.site == choice.site), None)
        moving = placement.bridge if placement is not None else 0
        if not option.bridge and not moving:
            continue
        # The rental that carries the servers' share of the demand (`delivery.py`).
        rental = bridging_rental(
            [*instance.cloud, *instance.bursts], choice.workload, option.share_permille
        )
        if rental is None:
            continue
        offer = catalog.cloud_offers.get(rental.offer)
        note = offer.pricing if offer is not None else None
        runs = f"{choice.workload}: its cheapest rental ({rental.instances} instance(s))"
        of = f"of {instance.horizon_months} months"
        if option.bridge:
            server = catalog.servers.get(option.sku)
            weeks = server.lead_time_weeks if server is not None else 0
            detail = (
                f"{runs} for the {weeks:g} weeks until the {option.sku} servers are delivered, {of}"
            )
            line = CostItem(
                kind="cloud_rental", subject=rental.offer, detail=detail, amount=option.bridge
            )
            out.append(priced(line, 1, "rental until delivery", option.bridge, note))
        if moving:
            wait = _wait(instance, option, choice.site or "")
            at = f"until its {option.sku} servers are in service at {choice.site}"
            detail = f"{runs} {at} ({wait}), {of}"
            line = CostItem(kind="cloud_rental", subject=rental.offer, detail=detail, amount=moving)
            out.append(priced(line, 1, "rental while servers move", moving, note))
    return out


def _wait(instance: ir.Instance, option: ir.OwnedOption, site: str) -> str:
    """What the owned servers of a placement wait for, in words (`delivery.wait_for`)."""
    sku = instance.skus.get(option.sku)
    lead_weeks = sku.lead_time_days / 7 if sku is not None else 0.0
    return wait_for(instance.stock, option, site, lead_weeks).says()


def _cloud_line(
    choice: ir.Choice, option: ir.CloudOption, cand: Candidates, catalog: Catalog
) -> CostItem:
    """A rental at the tier it is charged at: instance-hours on demand, or instance-months
    of a monthly or reserved term (the amount is rounded once, as the optimiser charged it,
    so quantity x unit price is within 0.5)."""
    meta = cand.meta[choice.option]
    offer = catalog.cloud_offers.get(option.offer)
    tier = meta.rental_tier
    vat = vat_note(cand.vat_services)
    detail = f"{choice.workload}: {option.instances} instance(s)"
    if option.share_permille < 1000:
        detail += (
            f" for its burst ({option.share_permille / 10:g}% of the demand, beside its owned base)"
        )
    if tier is None or offer is None:
        return CostItem(
            kind="cloud_rental", subject=option.offer, detail=detail, amount=option.cost_total
        )
    price = tier.unit_price * cand.vat_services
    if tier.unit == "instance-hour":
        detail += f" x {tier.quantity:,.1f} h x {price:,.2f}/h{vat}"
    else:
        detail += (
            f" x {tier.quantity:,.0f} months x {price:,.2f}/month{vat} ({tier.name}; "
            f"{meta.rental_hours:,.1f} h of use)"
        )
    line = CostItem(
        kind="cloud_rental", subject=option.offer, detail=detail, amount=option.cost_total
    )
    quantity = option.instances * tier.quantity
    return priced(line, quantity, tier.unit, price, offer.pricing)


def price_source(note: PriceNote | None) -> tuple[str, bool]:
    """(source, illustrative) of a catalogue price: its source string and date, as the
    catalogue states them; an unknown price is flagged illustrative, never a quote."""
    if note is None:
        return "not in the catalogue", True
    return f"{note.source} (as of {note.as_of})", note.illustrative


def priced(
    line: CostItem,
    quantity: float,
    unit: str,
    unit_price: float,
    note: PriceNote | None,
    *,
    site: str | None = None,
) -> CostItem:
    """`line` with its purchase-order view filled in: how many, of what, at what price,
    from which catalogue source. Callers adding cost lines (network, storage, spares)
    use it so that the bill of materials reads every line the same way."""
    source, illustrative = price_source(note)
    update: dict[str, object] = {
        "quantity": quantity,
        "unit": unit,
        "unit_price": unit_price,
        "source": source,
        "illustrative": illustrative,
    }
    if site is not None:
        update["site"] = site
    return line.model_copy(update=update)


def colo_pricing(catalog: Catalog, offer_id: str) -> PriceNote | None:
    offer = catalog.colo_offers.get(offer_id)
    return offer.pricing if offer is not None else None


def _renewal(
    instance: ir.Instance, site_id: str, covered: int, cand: Candidates, catalog: Catalog
) -> list[CostItem]:
    """Contracted racks in use: paid already for the months left of the contract; the
    months of the horizon past it are renewed at the offer's monthly price."""
    contract = instance.contracts[site_id]
    months = max(0, instance.horizon_months - contract.months_paid)
    if not months:
        return []
    rent = instance.sites[site_id].rack_rent_month
    detail = (
        f"{covered} contracted rack(s) renewed after the {contract.months_paid} months paid: "
        f"x {rent:,}/month{vat_note(cand.vat_services)} x {months} months"
    )
    amount = covered * months * rent
    line = CostItem(kind="rack_rent", subject=site_id, detail=detail, amount=amount)
    note = colo_pricing(catalog, site_id)
    return [priced(line, covered * months, "rack-month", rent, note, site=site_id)]


def power_pricing(catalog: Catalog, offer_id: str) -> PriceNote | None:
    """The source of a colo offer's power price and PUE: its own note where the catalogue
    gives one, else the offer's figures named, under the offer's pricing note's date."""
    offer = catalog.colo_offers.get(offer_id)
    if offer is None:
        return None
    if offer.power_pricing is not None:
        return offer.power_pricing
    if offer.power_included:
        what = "power included in the rack price"
    else:
        what = f"power price {offer.power_price_per_kwh:g}/kWh"
    return _offer_figure(offer.pricing, f"{what}, PUE {offer.pue:g}", offer_id)


def bandwidth_pricing(catalog: Catalog, offer_id: str) -> PriceNote | None:
    """The source of a colo offer's bandwidth figures, as `power_pricing`."""
    offer = catalog.colo_offers.get(offer_id)
    if offer is None:
        return None
    if offer.bandwidth_pricing is not None:
        return offer.bandwidth_pricing
    what = (
        f"bandwidth {offer.bandwidth_mbps:g} Mbps included, "
        f"{offer.bandwidth_price_per_mbps_month:g}/Mbps-month beyond"
    )
    return _offer_figure(offer.pricing, what, offer_id)


def _offer_figure(note: PriceNote, what: str, offer_id: str) -> PriceNote:
    return note.model_copy(
        update={"source": f"{what}: figures of colo offer {offer_id} ({note.source})"}
    )


def resale_credit(
    solution: ir.Solution, instance: ir.Instance, cand: Candidates, catalog: Catalog
) -> ResaleCredit | None:
    """What each model of the servers bought would fetch if sold at the end of the horizon
    (the model's `residual`, per server; servers already owned are not in it); None when
    nothing is credited."""
    h = instance.horizon_months
    basis = finance.credit_basis(cand.finance_terms)
    lines: list[ResaleLine] = []
    for (sku, site), n in sorted(purchases(instance, solution.servers, solution.bought).items()):
        value = instance.skus[sku].residual
        if not value or not n:
            continue
        server = catalog.servers.get(sku)
        price, _ = price_source(server.pricing if server is not None else None)
        detail = (
            f"{n} at {site} x {value:,} ({cand.residual_share:.1%} of "
            f"{instance.skus[sku].capex:,} at month {h})"
        )
        lines.append(
            ResaleLine(
                server=sku,
                site=site,
                count=n,
                unit_value=value,
                amount=n * value,
                detail=detail,
                source=f"{basis}; price {price}",
            )
        )
    if not lines:
        return None
    return ResaleCredit(amount=sum(ln.amount for ln in lines), month=h, basis=basis, lines=lines)


def _bandwidth(
    solution: ir.Solution, instance: ir.Instance, cand: Candidates, catalog: Catalog
) -> list[CostItem]:
    """Each used site's included bandwidth, then the Mbps its workloads need beyond it."""
    h = instance.horizon_months
    owned = {o.key: o for o in instance.owned}
    placed: Placed = [
        (owned[c.option], next(p for p in owned[c.option].placements if p.site == c.site))
        for c in solution.choices
        if c.option in owned
    ]
    extra = extra_mbps(instance, placed)
    out: list[CostItem] = []
    for site_id in sorted({c.site for c in solution.choices if c.site is not None}):
        site = instance.sites[site_id]
        offer = catalog.colo_offers.get(site_id)
        note = bandwidth_pricing(catalog, site_id)
        month = site.bandwidth_month
        detail = f"{site.bandwidth_mbps:,} Mbps included: {month:,}/month x {h} months"
        line = CostItem(kind="bandwidth", subject=site_id, detail=detail, amount=h * month)
        out.append(priced(line, h, "month", month, note, site=site_id))
        more = extra.get(site_id, 0)
        if more:
            price = offer.bandwidth_price_per_mbps_month if offer is not None else 0.0
            price *= cand.vat_services
            detail = (
                f"{more:,} Mbps beyond the included {site.bandwidth_mbps:,} (the workloads there "
                f"need {site.bandwidth_mbps + more:,}) x {price:g}/Mbps-month"
                f"{vat_note(cand.vat_services)} x {h} months"
            )
            # Priced per Mbps over the horizon, the coefficient the optimiser charges (rounded
            # once), so that quantity x unit price is the amount exactly.
            per_mbps = site.extra_mbps_cost
            amount = more * per_mbps
            line = CostItem(kind="bandwidth", subject=site_id, detail=detail, amount=amount)
            unit = f"Mbps for {h} months"
            out.append(priced(line, more, unit, per_mbps, note, site=site_id))
    return out


def _energy(
    solution: ir.Solution, instance: ir.Instance, cand: Candidates, catalog: Catalog
) -> list[CostItem]:
    """Idle power of every owned server for the whole horizon, per (SKU, site); then what
    each chosen option's servers draw above idle for the hours its workload runs."""
    h = instance.horizon_months
    out: list[CostItem] = []
    for (sku, site_id), n in sorted(solution.servers.items()):
        month = instance.sites[site_id].energy_month.get(sku, 0)
        server = catalog.servers.get(sku)
        idle = ""
        if server is not None:
            fraction = cand.finance_terms.idle_power_fraction
            idle_kw = finance.idle_power_kw(server.power_kw, server.idle_power_kw, fraction)
            idle = f" ({idle_kw:,.2f} kW idle)"
        detail = f"idle: {n} x {sku}{idle} x {month:,}/month x {h} months"
        line = CostItem(kind="energy", subject=site_id, detail=detail, amount=h * n * month)
        note = power_pricing(catalog, site_id)
        out.append(priced(line, n * h, "server-month idle", month, note, site=site_id))
    owned = {o.key: o for o in instance.owned}
    for choice in solution.choices:
        option = owned.get(choice.option)
        if option is None or choice.site is None:
            continue
        placement = next(p for p in option.placements if p.site == choice.site)
        if placement.busy_energy:
            out.append(_busy_line(choice, option, placement, cand, catalog))
    return out


def _busy_line(
    choice: ir.Choice,
    option: ir.OwnedOption,
    placement: ir.Placement,
    cand: Candidates,
    catalog: Catalog,
) -> CostItem:
    offer = catalog.colo_offers[placement.site]
    meta = cand.meta[option.key]
    hours, idle_kw, busy_kw = meta.busy_hours, meta.idle_kw, meta.busy_kw
    price = offer.power_price_per_kwh * cand.vat_goods
    kwh = option.servers * (busy_kw - idle_kw) * hours * offer.pue
    detail = (
        f"{choice.workload} running: {option.servers} x {option.sku} x "
        f"({busy_kw:,.2f} - {idle_kw:,.2f}) kW above idle x {hours:,.1f} h x PUE {offer.pue:g} "
        f"x {price:g}/kWh{vat_note(cand.vat_goods)}"
    )
    line = CostItem(
        kind="energy", subject=placement.site, detail=detail, amount=placement.busy_energy
    )
    note = power_pricing(catalog, placement.site)
    return priced(line, round(kwh, 3), "kWh", price, note, site=placement.site)


def penalty_items(solution: ir.Solution, cand: Candidates) -> list[PenaltyItem]:
    """Each soft-rule charge of each chosen option (a mixed option's burst included) and
    of its placement."""
    out: list[PenaltyItem] = []
    bursts = [c for c, o in ir.rentals(solution, cand.instance) if o.share_permille < 1000]
    for choice in [*solution.choices, *bursts]:
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
    horizon = resale_credit(solution, instance, cand, catalog)
    end_credit = horizon.amount if horizon is not None else 0
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
            storage=total["storage"],
            financing=total["financing"],
            penalties=penalty_total,
            items=items,
            penalty_items=penalties,
        ),
        penalties=penalty_total,
        resale=solution.costs.resale,
        horizon_resale=horizon,
        objective_value=tco
        + penalty_total
        - solution.costs.resale
        - end_credit
        + solution.costs.financing_steer,
    )
