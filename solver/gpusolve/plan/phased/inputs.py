"""`plan` with `periods:`: the phased instance from the requirements and the catalogue.

Each period is the requirements with the period's length as the horizon, only the
workloads running in it, their demand for it (inference: target tokens/s and concurrency
times the period's demand factor; training: the runs spread evenly over the months the
workload runs, times the factor), on the catalogue as it stands at the period's start
(items not yet available removed, rental prices moved by their trend), run through the
ordinary candidates stage (`candidates.prepare`). What the periods share is priced here:
each SKU's price per purchase period (its trend, else its card's), the period it first
works in (its lead time), each purchase cohort's residual value at the horizon (when the
single plan credits residual value), each site's minimum term. Rules are evaluated once, on
the requirements as written, as for scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.candidates.layout_memo import shared_layouts
from gpusolve.candidates.prepare import Prepared, prepare
from gpusolve.errors import InputError
from gpusolve.models.catalog import Catalog, CloudOffer, Server
from gpusolve.models.money import to_money
from gpusolve.models.periods import (
    Period,
    active,
    active_months,
    cohort_age_months,
    demand_factor,
    first_working_period,
    price_factor,
    split_horizon,
)
from gpusolve.models.requirements import InferenceWorkload, Requirements, Workload
from gpusolve.optimize import finance
from gpusolve.optimize.phased.ir import PhasedInstance
from gpusolve.plan.inputs import Inputs


@dataclass(frozen=True)
class PhasedInputs:
    instance: PhasedInstance
    prepared: tuple[Prepared, ...]  # per period


def periods_of(reqs: Requirements) -> tuple[Period, ...]:
    assert reqs.periods is not None  # only phased runs come here
    return split_horizon(reqs.horizon_months, reqs.periods.length_months)


def period_requirements(reqs: Requirements, period: Period) -> Requirements:
    """The requirements one period's candidates are built from."""
    workloads = [
        for_period(w, reqs.horizon_months, period)
        for w in reqs.workloads
        if active(period, w.start_month, w.end_month)
    ]
    # The budgets bind the whole schedule (`optimize.phased.model`), not each period.
    cleared = {"capex_max": None, "capex_by_year": None, "monthly_max": None, "total_max": None}
    budget = reqs.budget.model_copy(update=cleared)
    return reqs.model_copy(
        update={
            "workloads": workloads,
            "horizon_months": period.months,
            "periods": None,
            "budget": budget,
        }
    )


def for_period(w: Workload, horizon_months: int, period: Period) -> Workload:
    factor = demand_factor(w.demand_growth, w.demand_by_period, period, w.start_month)
    cleared: dict[str, object] = {
        "start_month": 0,
        "end_month": None,
        "demand_growth": None,
        "demand_by_period": None,
    }
    if isinstance(w, InferenceWorkload):
        return w.model_copy(update={**cleared, **w.demand_scaled(factor)})
    # Training: the stated runs spread evenly over the months it runs, this period's share.
    end = w.end_month if w.end_month is not None else horizon_months
    share = active_months(period, w.start_month, end) / (end - w.start_month)
    cleared["runs"] = w.runs * share * factor
    return w.model_copy(update=cleared)


def period_catalog(catalog: Catalog, month: int) -> Catalog:
    """The catalogue at `month`: what is available by then, rentals at their trend."""
    cards = {k: c for k, c in catalog.cards.items() if c.available_from_month <= month}
    servers = {
        k: s
        for k, s in catalog.servers.items()
        if s.available_from_month <= month and s.card in cards
    }
    cloud = {k: _rental_at(o, month) for k, o in catalog.cloud_offers.items() if o.card in cards}
    return catalog.model_copy(update={"cards": cards, "servers": servers, "cloud_offers": cloud})


def _rental_at(offer: CloudOffer, month: int) -> CloudOffer:
    f = price_factor(offer.price_trend, month)
    if f == 1.0:
        return offer
    reserved = [
        r.model_copy(update={"price_per_month": r.price_per_month * f}) for r in offer.reserved
    ]
    monthly = offer.price_per_month * f if offer.price_per_month is not None else None
    return offer.model_copy(
        update={
            "price_per_hour": offer.price_per_hour * f,
            "price_per_month": monthly,
            "reserved": reserved,
        }
    )


def server_trend(catalog: Catalog, server: Server) -> float:
    """The server's yearly price trend: its own, else its card's, else flat."""
    trend = server.price_trend or catalog.cards[server.card].price_trend
    return trend.yearly_rate if trend is not None else 0.0


def build_phased(run: Inputs) -> PhasedInputs:
    reqs, catalog = run.reqs, run.catalog
    periods = periods_of(reqs)
    with shared_layouts():  # each period asks the same layout searches again
        prepared = tuple(
            prepare(
                period_requirements(reqs, p), period_catalog(catalog, p.start_month), run.policies
            )
            for p in periods
        )
    instances = tuple(p.cand.instance for p in prepared)
    skus = {k: v for inst in reversed(instances) for k, v in inst.skus.items()}
    terms = prepared[0].cand.finance_terms
    price: dict[str, tuple[int | None, ...]] = {}
    works_from: dict[str, tuple[int | None, ...]] = {}
    residual: dict[str, tuple[int, ...]] = {}
    for k, sku in skus.items():
        server = catalog.servers.get(k)
        if server is None:
            continue
        available = max(
            server.available_from_month, catalog.cards[server.card].available_from_month
        )
        rate = server_trend(catalog, server)
        prices = [
            to_money(sku.capex * (1 + rate) ** (p.start_month / 12))
            if p.start_month >= available
            else None
            for p in periods
        ]
        price[k] = tuple(prices)
        works_from[k] = tuple(
            first_working_period(p, server.lead_time_weeks, periods) for p in periods
        )
        residual[k] = tuple(
            _cohort_residual(terms, sku.residual > 0, x, cohort_age_months(p, reqs.horizon_months))
            for p, x in zip(periods, prices, strict=True)
        )
    min_term = {
        s: catalog.colo_offers[s].min_term_months or 0
        for inst in instances
        for s in inst.sites
        if s in catalog.colo_offers
    }
    capex_by_year = tuple(to_money(v) for v in reqs.budget.capex_by_year or ())
    pi = PhasedInstance(
        periods,
        instances,
        price,
        works_from,
        reqs.horizon_months,
        residual=residual,
        min_term_months=min_term,
        capex_max=_money(reqs.budget.capex_max),
        capex_by_year=capex_by_year,
        monthly_max=_money(reqs.budget.monthly_max),
        total_max=_money(reqs.budget.total_max),
        cards=tuple({k: m.card for k, m in p.cand.meta.items()} for p in prepared),
        switch_cost=switch_costs(reqs),
    )
    return PhasedInputs(pi, prepared)


# Moving a workload between platforms or sites between periods: copying its weights and
# data, re-deploying the serving or training stack and validating it (accuracy, latency)
# on the new hardware. Estimate: one engineer-week, 5 working days x ~4,000 CNY a day
# (a loaded cost of ~1 M CNY a year over ~250 working days; illustrative, not sourced);
# the transfer itself is small beside it (a 70B model's 140 GB of bf16 weights is
# minutes at IDC bandwidth).
DEFAULT_SWITCH_COST_CNY = 20_000


def switch_costs(reqs: Requirements) -> dict[str, int]:
    """Per workload, what moving it between periods costs: its own figure, else the
    default where the run is in CNY (the only currency the default is stated in)."""
    default = DEFAULT_SWITCH_COST_CNY if reqs.currency == "CNY" else 0
    return {
        w.name: to_money(w.switch_cost) if w.switch_cost is not None else default
        for w in reqs.workloads
    }


def _money(value: float | None) -> int | None:
    return to_money(value) if value is not None else None


def _cohort_residual(terms: finance.Terms, credited: bool, price: int | None, age: int) -> int:
    """A cohort's value per server at the horizon: as the single plan credits it (straight
    line to salvage over the useful life), from its own purchase price and age."""
    if not credited or price is None:
        return 0
    fraction = finance.residual_fraction(age, terms.useful_life_months, terms.salvage_fraction)
    return finance.residual_value(price, fraction)


def check_phased(reqs: Requirements, file: str) -> None:
    """What the schedule does not plan yet, refused with a located message: objectives
    other than min-tco (the schedule minimises TCO + penalties over its periods) and
    scenarios (a two-stage plan over periods)."""
    refused = []
    if reqs.objective != "min-tco":
        refused.append(f"objective {reqs.objective!r}")
    if reqs.scenarios:
        refused.append("scenarios:")
    if refused:
        raise InputError.single(
            file,
            f"{', '.join(refused)}: not planned over periods yet",
            hint="plan over periods with min-tco and no scenarios (budgets of every kind "
            "apply), or drop `periods`",
        )
