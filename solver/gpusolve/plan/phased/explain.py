"""The phased instance in explain mode: what `optimize/phased_explain.py` searches for a
conflict in, and the user's words for each requirement it can name.

Each period's candidates are built on the whole catalogue (items not yet available kept,
rentals at their trend) in explain mode, so every option that breaks a requirement is
there, tagged; a rental of a card not yet available in a period is tagged
`available:<card>`. Servers are priced in every period (before they can be ordered, at
what their trend says they would cost), and ordering one before its first month is the
requirement `available:<sku>`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpusolve.candidates.prepare import Prepared, prepare
from gpusolve.models.catalog import Catalog
from gpusolve.models.money import to_money
from gpusolve.models.periods import Period, active, first_working_period, fiscal_year
from gpusolve.optimize import ir
from gpusolve.optimize.phased.ir import PhasedInstance
from gpusolve.plan.inputs import Inputs
from gpusolve.plan.phased.inputs import (
    PhasedInputs,
    period_catalog,
    period_requirements,
    server_trend,
)


@dataclass(frozen=True)
class ExplainInputs:
    instance: PhasedInstance
    requirements: dict[str, ir.Requirement]  # every requirement the model may relax
    prepared: tuple[Prepared, ...]  # per period, in explain mode


def _everything_now(catalog: Catalog) -> Catalog:
    cards = {k: c.model_copy(update={"available_from_month": 0}) for k, c in catalog.cards.items()}
    servers = {
        k: s.model_copy(update={"available_from_month": 0}) for k, s in catalog.servers.items()
    }
    return catalog.model_copy(update={"cards": cards, "servers": servers})


def first_month(catalog: Catalog, server: str) -> int:
    """The month a server can first be ordered: its own, or its card's when later."""
    s = catalog.servers[server]
    return max(s.available_from_month, catalog.cards[s.card].available_from_month)


def build_explain(run: Inputs, phased_inputs: PhasedInputs) -> ExplainInputs:
    """The explain-mode twin of `phased_inputs` (same periods, prices, lead times and budgets)."""
    reqs, catalog = run.reqs, run.catalog
    base = phased_inputs.instance
    periods = base.periods
    whole = _everything_now(catalog)
    prepared = tuple(
        prepare(
            period_requirements(reqs, p),
            period_catalog(whole, p.start_month),
            run.policies,
            explain=True,
        )
        for p in periods
    )
    requirements: dict[str, ir.Requirement] = {}
    instances = []
    for p, prep in zip(periods, prepared, strict=True):
        inst = _unavailable_rentals(prep, catalog, p, requirements)
        requirements.update(inst.requirements)
        instances.append(inst)
    skus = {k: v for inst in reversed(instances) for k, v in inst.skus.items()}
    price = dict(base.price)
    works_from = dict(base.works_from)
    residual = dict(base.residual)
    available: dict[str, int] = {}
    for k, sku in skus.items():
        server = catalog.servers.get(k)
        if server is None:
            continue
        month = first_month(catalog, k)
        rate = server_trend(catalog, server)
        price[k] = tuple(to_money(sku.capex * (1 + rate) ** (p.start_month / 12)) for p in periods)
        works_from[k] = tuple(
            first_working_period(p, server.lead_time_weeks, periods) for p in periods
        )
        residual.setdefault(k, (0,) * len(periods))
        first = next((p.index for p in periods if p.start_month >= month), len(periods))
        if first > 0:
            available[k] = first
            requirements[f"available:{k}"] = ir.Requirement(
                f"available:{k}", f"{k} orderable from month {month}"
            )
        if server.lead_time_weeks > 0:
            requirements[f"lead_time:{k}"] = ir.Requirement(
                f"lead_time:{k}",
                f"{k} delivered {server.lead_time_weeks:g} weeks after it is ordered",
            )
    requirements.update(_budgets(run, periods))
    requirements.update(_demands(run, periods))
    pi = replace(
        base,
        instances=tuple(instances),
        price=price,
        works_from=works_from,
        residual=residual,
        available_period=available,
    )
    return ExplainInputs(pi, requirements, prepared)


def _unavailable_rentals(
    prep: Prepared, catalog: Catalog, period: Period, requirements: dict[str, ir.Requirement]
) -> ir.Instance:
    """The period's instance, its rentals of cards not yet out tagged `available:<card>`."""
    inst = prep.cand.instance
    cloud = []
    for c in inst.cloud:
        card = prep.cand.meta[c.key].card
        month = catalog.cards[card].available_from_month if card in catalog.cards else 0
        if month > period.start_month:
            name = f"available:{card}"
            requirements[name] = ir.Requirement(name, f"{card} available from month {month}")
            c = replace(c, violates=c.violates | {name})
        cloud.append(c)
    return replace(inst, cloud=tuple(cloud))


def _budgets(run: Inputs, periods: tuple[Period, ...]) -> dict[str, ir.Requirement]:
    budget, cur = run.reqs.budget, run.reqs.currency
    out: dict[str, ir.Requirement] = {}
    if budget.capex_max is not None:
        out["capex"] = ir.Requirement("capex", f"capex cap of {budget.capex_max:,.0f} {cur}")
    years = {fiscal_year(p.start_month) for p in periods}
    for y, limit in enumerate(budget.capex_by_year or ()):
        if y in years:
            out[f"capex_year:{y}"] = ir.Requirement(
                f"capex_year:{y}",
                f"capex budget of {limit:,.0f} {cur} in fiscal year {y} "
                f"(months {12 * y}-{12 * y + 11})",
            )
    return out


def _demands(run: Inputs, periods: tuple[Period, ...]) -> dict[str, ir.Requirement]:
    out: dict[str, ir.Requirement] = {}
    for w in run.reqs.workloads:
        running = [p for p in periods if active(p, w.start_month, w.end_month)]
        for i, p in enumerate(running):
            where = f"P{p.index}, months {p.start_month}-{p.end_month}"
            said = (
                f"{w.name} starting at month {w.start_month} ({where})"
                if i == 0
                else f"{w.name}'s demand in {where}"
            )
            name = f"demand:{w.name}:{p.index}"
            out[name] = ir.Requirement(name, said)
    return out
