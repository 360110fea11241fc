"""The requirements' `owned:` inventory as the optimiser sees it (`optimize/inventory.py`).

Owned servers become integer stock per (server model, site) at zero purchase cost, with
their resale price per server when one is given; contracted racks become racks already
paid at their site for the months left of the contract. Export status does not block
stock already held: a model the market forbids buying stays usable from the stock, only
no more of it is bought (`Sku.buyable`, and the market policy keeps its options to the
sites that hold it, `market.py`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from gpusolve.candidates.market import purchase_block, resolve_market
from gpusolve.models.catalog import Catalog
from gpusolve.models.inventory import Owned, OwnedServers
from gpusolve.models.money import to_money
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir
from gpusolve.optimize.inventory import covered_racks


def held_blocked(reqs: Requirements, catalog: Catalog) -> frozenset[str]:
    """Owned server models the run's market forbids buying (more of)."""
    view = resolve_market(reqs, catalog)
    out = set()
    for held in reqs.owned.servers:
        server = catalog.servers.get(held.server)
        if server is not None and purchase_block(catalog.cards[server.card], server, view):
            out.add(server.id)
    return frozenset(out)


# Moving one owned GPU server between colocation sites: de-racking and packing it, insured
# freight within China, re-racking, cabling and a burn-in test. Estimate (illustrative, not
# sourced): about a day of remote hands at each end (~1,500 CNY each) and ~5,000 CNY of
# insured freight for an 8U, ~100 kg server worth ~1M CNY.
DEFAULT_MOVE_COST_CNY = 8_000


def move_cost(held: OwnedServers, currency: str) -> int | None:
    """Per server, what moving an owned line costs; None when it stays (`movable: false`,
    or no figure in a currency the default is not stated in)."""
    if not held.movable:
        return None
    if held.move_cost is not None:
        return to_money(held.move_cost)
    return DEFAULT_MOVE_COST_CNY if currency == "CNY" else None


def with_inventory(instance: ir.Instance, reqs: Requirements, catalog: Catalog) -> ir.Instance:
    """`instance` with the owned servers of `reqs` as stock (the sites already carry the
    contracted racks, `contracted_sites`)."""
    owned = reqs.owned
    if not owned.servers and not owned.racks:
        return instance
    blocked = held_blocked(reqs, catalog)
    stock = tuple(
        ir.Stock(
            sku=s.server,
            site=s.site,
            count=s.count,
            resale=to_money(s.resale) if s.resale is not None else 0,
            move_cost=move_cost(s, reqs.currency),
            move_downtime_days=s.move_downtime_days,
        )
        for s in sorted(owned.servers, key=lambda s: (s.server, s.site))
    )
    contracts = {
        r.site: ir.Contract(r.site, r.racks, min(r.term_months, reqs.horizon_months))
        for r in owned.racks
    }
    skus = {
        k: dataclasses.replace(sku, buyable=False) if k in blocked else sku
        for k, sku in instance.skus.items()
    }
    contracts = {k: c for k, c in contracts.items() if k in instance.sites}
    return dataclasses.replace(instance, skus=skus, stock=stock, contracts=contracts)


def contracted_sites(sites: dict[str, ir.Site], reqs: Requirements) -> dict[str, ir.Site]:
    """Sites with contracted racks: those racks come on top of the offer's availability,
    and the site's set-up fee was paid with the contract."""
    racks = {r.site: r.racks for r in reqs.owned.racks}
    return {
        k: dataclasses.replace(site, racks_available=site.racks_available + racks[k], setup_fee=0)
        if k in racks
        else site
        for k, site in sites.items()
    }


def with_contracts(instance: ir.Instance, owned: Owned) -> ir.Instance:
    """`instance` with the contracted racks of `owned` at its sites (`colo`: the fleet's
    offer; the owned servers are fleet lines there, not stock)."""
    contracts = {
        r.site: ir.Contract(r.site, r.racks, min(r.term_months, instance.horizon_months))
        for r in owned.racks
        if r.site in instance.sites
    }
    if not contracts:
        return instance
    sites = {
        k: dataclasses.replace(site, racks_available=site.racks_available + contracts[k].racks)
        if k in contracts
        else site
        for k, site in instance.sites.items()
    }
    return dataclasses.replace(instance, sites=sites, contracts=contracts)


def paid_rack_months(
    instance: ir.Instance, racks: Mapping[tuple[str, tuple[tuple[str, int], ...]], int]
) -> int:
    """Rack-months of a solution already paid by the contracts (racks in use, up to the
    contract, times the months paid)."""
    covered = covered_racks(instance, racks)
    return sum(instance.contracts[site].months_paid * n for site, n in covered.items())
