"""The servers a plan finances, in the plan's words: the TCO's financing lines, and per
server model and site the terms and the reason (`optimize/financing.py` chose them)."""

from __future__ import annotations

from gpusolve.models.money import FinancedServers, FinanceTerms, terms_of
from gpusolve.models.plan import CostItem
from gpusolve.optimize import financing, ir


def financing_items(solution: ir.Solution, instance: ir.Instance) -> list[CostItem]:
    """One line per (server model, site, offer) financed: what financing adds to the price."""
    offers = {o.name: o for o in instance.financing}
    out = []
    for (sku, site, name), n in sorted(solution.leased.items()):
        o, price = offers[name], instance.skus[sku].capex
        p = financing.payments(price, o.annual_rate, o.term_months, o.down_payment, o.buy_out)
        detail = (
            f"{n} x {sku} at {site} by {name}: ({p.down:,} down + {p.months} x {p.each:,} "
            f"+ buy-out {p.buy_out:,}) - price {price:,} = {p.paid - price:,} each"
        )
        amount = n * (p.paid - price)
        out.append(
            CostItem(
                kind="financing",
                subject=sku,
                detail=detail,
                amount=amount,
                quantity=n,
                unit="server financed",
                unit_price=p.paid - price,
                source="catalog/finance/terms.yaml",
                illustrative=True,
                site=site,
            )
        )
    return out


def why_financed(solution: ir.Solution, instance: ir.Instance, currency: str) -> str:
    """The reason the plan finances servers: the cap that binds, else the present value."""
    costs = solution.costs
    if costs is None:
        return ""
    cap = instance.capex_max
    if cap is not None and costs.capex > cap:
        return (
            f"the capex cap of {cap:,} {currency} binds: the servers cost {costs.capex:,} "
            f"{currency}, more than it allows; financed, {costs.financed:,} {currency} of their "
            f"price is paid over the term instead (interest {costs.financing:,} {currency}), "
            "which costs less than renting or buying less within the caps"
        )
    for name in ("monthly", "total"):
        if name in solution.binding:
            return (
                f"the {name} cap binds; financing these servers is the cheapest plan within it "
                f"(interest {costs.financing:,} {currency})"
            )
    rate = next((o.discount_rate for o in instance.financing if o.discount_rate), None)
    if costs.financing_steer < 0 and rate is not None:
        return (
            f"at the requirements' discount rate of {rate:.1%} a year the payments are worth "
            f"{-costs.financing_steer - costs.financing:,} {currency} less today than paying "
            "cash, though they add "
            f"{costs.financing:,} {currency} nominal"
        )
    return "the cheapest plan within the requirements"


def financed_servers(
    solution: ir.Solution, instance: ir.Instance, terms: FinanceTerms | None, currency: str
) -> list[FinancedServers]:
    """Each (server model, site, offer) financed, with its terms per server and the reason."""
    offers = {o.name: o for o in instance.financing}
    why = why_financed(solution, instance, currency)
    out = []
    for (sku, site, name), n in sorted(solution.leased.items()):
        o, price = offers[name], instance.skus[sku].capex
        p = financing.payments(price, o.annual_rate, o.term_months, o.down_payment, o.buy_out)
        stated = terms.financing.get(name) if terms is not None else None
        out.append(
            FinancedServers(
                server=sku,
                site=site,
                count=n,
                offer=name,
                **terms_of(o),
                unit_price=price,
                down_per_server=p.down,
                monthly_per_server=p.each,
                buy_out_per_server=p.buy_out,
                paid_per_server=p.paid,
                interest=n * (p.paid - price),
                why=why,
                source=stated.source if stated is not None else "",
            )
        )
    return out
