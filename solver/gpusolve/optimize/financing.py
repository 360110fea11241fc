"""Financing bought servers: a finance lease (融资租赁) or instalments the plan may choose.

Per (SKU, site) the servers bought may be split between cash and each financing offer
(an integer per offer, their sum at most the servers bought). A financed server pays a
down payment at delivery, then equal monthly payments in arrears over the term by the
annuity formula, P = (A - B / (1+i)^n) x i / (1 - (1+i)^-n) on the amount A financed
(the price less the down payment), i the monthly rate (annual / 12), n the term, B the
buy-out paid with the last payment. So, exactly and linearly:
- the TCO counts what a financed server really costs, down + n x P + B (`paid`), as its
  price in capex plus `paid - price` as its financing cost;
- the capex cap counts cash purchases and down payments only (price - down is financed);
- the monthly cap counts the instalments paid within the horizon (all of them when the
  term is shorter), as if the first were paid in the first month: never fewer than the
  cash view lays out;
- the residual value is a purchase's: the server is the buyer's after the buy-out.
The objective counts `paid` (nominal money, as every other cost), or, when the
requirements state a discount rate, the payments' present value at it: a lease whose rate
is below the buyer's cost of capital is then worth taking without a budget that binds.
Terms come from catalog/finance/terms.yaml (each sourced or labelled an estimate there).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from gpusolve.models.money import to_money
from gpusolve.optimize.builder import Expr, Var, wsum
from gpusolve.optimize.ir import FinanceOffer, Instance


def annuity_payment(principal: float, annual_rate: float, months: int, balloon: float = 0) -> float:
    """The equal monthly payment, in arrears, that repays `principal` over `months` at
    `annual_rate` (monthly rate annual / 12) with `balloon` left to pay at the end."""
    i = annual_rate / 12
    if i == 0:
        return (principal - balloon) / months
    growth = (1.0 + i) ** months
    return (principal - balloon / growth) * i / (1.0 - 1.0 / growth)


@dataclass(frozen=True)
class Payments:
    """One financed purchase in whole units: down at delivery, `each` for `months` months
    after it, `buy_out` with the last."""

    down: int
    each: int
    months: int
    buy_out: int

    @property
    def paid(self) -> int:
        return self.down + self.each * self.months + self.buy_out

    def present_value(self, annual_rate: float) -> float:
        """At delivery, month k discounted by (1 + r)^(k / 12)."""
        factor = 1.0 / (1.0 + annual_rate)
        flows = sum(self.each * factor ** (k / 12.0) for k in range(1, self.months + 1))
        return float(self.down + flows + self.buy_out * factor ** (self.months / 12.0))


def payments(
    price: float, annual_rate: float, term_months: int, down_share: float, buy_out_share: float
) -> Payments:
    """How a purchase of `price` is paid on these terms, whole units."""
    down = to_money(price * down_share)
    balloon = to_money(price * buy_out_share)
    each = to_money(annuity_payment(price - down, annual_rate, term_months, balloon))
    return Payments(down, each, term_months, balloon)


@dataclass(frozen=True)
class PerServer:
    """One financed server's figures in the model, whole units (`ir.FinanceOffer`)."""

    down: int  # counts against the capex cap
    instalments: int  # paid within the horizon: the monthly cap
    paid: int  # down + every instalment + buy-out: the TCO
    steer: int  # the objective's figure less `paid` (0 when it counts nominal money)


def per_server(o: FinanceOffer, price: int, horizon_months: int) -> PerServer:
    """What financing one server of `price` on offer `o` adds to each term of the model."""
    p = payments(price, o.annual_rate, o.term_months, o.down_payment, o.buy_out)
    steer = 0
    if o.discount_rate is not None:
        steer = to_money(p.present_value(o.discount_rate)) - p.paid
    return PerServer(p.down, p.each * min(p.months, horizon_months), p.paid, steer)


# --- the model -----------------------------------------------------------------------


@dataclass
class FinancingVars:
    """Servers financed per (SKU, site, offer) and the money terms they add."""

    leased: dict[tuple[str, str, str], Var] = field(default_factory=dict)
    extra: Expr | int = 0  # paid - price: in the TCO
    financed: Expr | int = 0  # price - down: outside the capex cap
    instalments: Expr | int = 0  # within the horizon: inside the monthly cap
    steer: Expr | int = 0  # the objective's present value less the nominal money

    def variables(self) -> list[Var]:
        return list(self.leased.values())

    def site_variables(self) -> dict[str, list[Var]]:
        out: dict[str, list[Var]] = {}
        for (_, site, _), var in self.leased.items():
            out.setdefault(site, []).append(var)
        return out


def financing_terms(
    model: cp_model.CpModel,
    instance: Instance,
    bought: Mapping[tuple[str, str], Var | Expr],
    upper: Mapping[tuple[str, str], int],
) -> FinancingVars | None:
    """Per (SKU, site) bought and offer covering the SKU, the servers financed (their sum
    at most those bought) and their money terms; None without an offer."""
    if not instance.financing:
        return None
    out = FinancingVars()
    extra, financed, instalments, steer = [], [], [], []
    h = instance.horizon_months
    for (sku, site), count in sorted(bought.items(), key=lambda kv: kv[0]):
        price = instance.skus[sku].capex if sku in instance.skus else 0
        ub = max(0, upper.get((sku, site), 0))
        if price <= 0 or ub == 0:
            continue
        parts = []
        for o in instance.financing:
            f = per_server(o, price, h)
            var = model.new_int_var(0, ub, f"financed[{sku}@{site}:{o.name}]")
            out.leased[(sku, site, o.name)] = var
            parts.append(var)
            extra.append((f.paid - price, var))
            financed.append((price - f.down, var))
            instalments.append((f.instalments, var))
            steer.append((f.steer, var))
        model.add(sum(parts) <= count)
    out.extra, out.financed = wsum(extra), wsum(financed)
    out.instalments, out.steer = wsum(instalments), wsum(steer)
    return out


# --- the solver-independent check ------------------------------------------------------


@dataclass(frozen=True)
class Recomputed:
    extra: int = 0
    financed: int = 0
    instalments: int = 0
    steer: int = 0


def recompute(
    instance: Instance,
    leased: Mapping[tuple[str, str, str], int],
    bought: Mapping[tuple[str, str], int],
    problems: list[str],
) -> Recomputed:
    """The financing terms from the counts alone; a count on no offer or over the servers
    bought is a problem."""
    offers = {o.name: o for o in instance.financing}
    per: dict[tuple[str, str], int] = {}
    extra = financed = instalments = steer = 0
    for (sku, site, name), n in sorted(leased.items()):
        o = offers.get(name)
        if o is None or sku not in instance.skus or n < 0:
            problems.append(f"{n} x {sku}@{site} financed by {name!r}: no such offer for it")
            continue
        per[(sku, site)] = per.get((sku, site), 0) + n
        price = instance.skus[sku].capex
        f = per_server(o, price, instance.horizon_months)
        extra += n * (f.paid - price)
        financed += n * (price - f.down)
        instalments += n * f.instalments
        steer += n * f.steer
    for key, n in sorted(per.items()):
        if n > bought.get(key, 0):
            problems.append(f"{n} x {key[0]}@{key[1]} financed > {bought.get(key, 0)} bought")
    return Recomputed(extra, financed, instalments, steer)
