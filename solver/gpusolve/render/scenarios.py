"""The two-stage plan against the nominal one, scenario by scenario (text and markdown)."""

from __future__ import annotations

from gpusolve.models.plan import Plan, ScenarioOutcome, Scenarios
from gpusolve.render.fmt import money

_CANNOT = "cannot meet it"


def _nominal(o: ScenarioOutcome, cur: str) -> str:
    return _CANNOT if o.nominal_tco is None else money(o.nominal_tco, cur)


def _saves(o: ScenarioOutcome, cur: str) -> str:
    return money((o.nominal_tco or 0.0) - o.tco, cur)


def _summary(s: Scenarios, cur: str) -> list[str]:
    what = "expected" if s.robust == "expected" else "worst-case"
    nominal = "cannot meet every scenario" if s.nominal_tco is None else money(s.nominal_tco, cur)
    lines = [f"{what} TCO: hedged plan {money(s.tco, cur)}, nominal plan {nominal}"]
    if s.hedge_cost is not None:
        lines.append(f"the hedge costs {money(s.hedge_cost, cur)} if the nominal scenario happens")
    worst = _pessimistic(s)
    if worst is not None and worst.nominal_tco is None:
        lines.append(f"if {worst.name} happens, the nominal plan cannot meet it at all")
    elif worst is not None:
        lines.append(f"if {worst.name} happens, the hedge saves {_saves(worst, cur)}")
    return lines


def _pessimistic(s: Scenarios) -> ScenarioOutcome | None:
    """The scenario the nominal plan fares worst in (fails, or costs the most)."""
    if not s.outcomes:
        return None
    return max(s.outcomes, key=lambda o: (o.nominal_tco is None, o.nominal_tco or 0.0, o.name))


def scenarios_text(plan: Plan) -> list[str]:
    s = plan.scenarios
    if s is None:
        return []
    cur = plan.cost.currency if plan.cost else ""
    lines = ["", "Scenarios (bought once for all; rentals re-chosen per scenario)"]
    lines += [f"  {line}" for line in _summary(s, cur)]
    width = max(len(o.name) for o in s.outcomes) if s.outcomes else 8
    lines.append(f"  {'scenario':<{width}}  {'p':>5}  {'hedged TCO':>16}  {'nominal plan':>16}")
    for o in s.outcomes:
        lines.append(
            f"  {o.name:<{width}}  {o.probability:>5.2f}  {money(o.tco, cur):>16}  "
            f"{_nominal(o, cur):>16}"
        )
        if o.rented:
            lines.append(f"  {'':<{width}}  rents {'; '.join(o.rented)}")
    return lines


def scenarios_markdown(plan: Plan) -> list[str]:
    s = plan.scenarios
    if s is None:
        return []
    cur = plan.cost.currency if plan.cost else ""
    out = ["", "## Scenarios", ""]
    out += [f"- {line}" for line in _summary(s, cur)]
    out += ["", "| scenario | probability | hedged TCO | nominal plan's TCO | rents |"]
    out.append("|---|---|---|---|---|")
    for o in s.outcomes:
        rents = "; ".join(o.rented) or "—"
        out.append(
            f"| {o.name} | {o.probability:g} | {money(o.tco, cur)} | {_nominal(o, cur)} | {rents} |"
        )
    return out
