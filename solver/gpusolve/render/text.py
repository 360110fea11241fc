"""Plain-text plan for a terminal."""

from __future__ import annotations

from collections.abc import Callable

from gpusolve.models.plan import MarginMiss, Plan
from gpusolve.render.bom_tables import bom_text
from gpusolve.render.compliance import compliance_text, market_header, sources_text
from gpusolve.render.financing import financed_lines
from gpusolve.render.fmt import (
    against,
    cost_lines,
    goodput_lines,
    hardware,
    hours,
    layout,
    memory,
    money,
    objective_words,
    proof_scope,
    rack_use,
    resale_words,
    work,
)
from gpusolve.render.inventory import inventory_text
from gpusolve.render.risk import risk_text
from gpusolve.render.scenarios import scenarios_text
from gpusolve.render.sensitivity import sensitivity_text

INTERRUPTED = "interrupted, not proven optimal"


def plan_text(plan: Plan) -> str:
    lines: list[str] = []
    add = lines.append
    if plan.status == "infeasible":
        return _infeasible(plan)
    if plan.timed_out is not None:
        return _timed_out(plan)
    cur = plan.cost.currency if plan.cost else ""
    proven = "proven optimal" if plan.solver.proven_optimal else _best_found(plan)
    if plan.status == "interrupted":
        proven = INTERRUPTED
    add(f"Plan ({plan.objective}, {proven})")
    scope = proof_scope(plan.solver)
    if scope:
        add(f"  {scope[0].upper()}{scope[1:]}")
    if plan.cost:
        c = plan.cost
        add(
            f"  TCO over {c.horizon_months} months: {money(c.tco, cur)}   "
            f"capex {money(c.capex, cur)}   monthly {money(c.monthly_opex, cur)}"
        )
        objective = f"{objective_words(c)} = {money(c.objective_value, cur)}"
        if c.resale:
            add(f"  resale credit {money(c.resale, cur)} (owned servers sold now; not in the TCO)")
        if c.horizon_resale is not None:
            add(f"  resale credit {money(c.horizon_resale.amount, cur)} ({resale_words(c)})")
        if plan.scenarios is not None:
            hedge = plan.scenarios
            what = "expected" if hedge.robust == "expected" else "worst-case"
            add(
                f"  {what} TCO over {len(hedge.outcomes)} scenarios: {money(hedge.tco, cur)} "
                "(the line above is the nominal scenario's)"
            )
        if c.penalties:
            add(f"  soft-rule penalties {money(c.penalties, cur)} (not spent); {objective}")
        elif c.credits:
            add(f"  {objective}")
    lines += market_header(plan)
    add("")
    add("Deployments")
    for d in plan.deployments:
        where = f" at {d.site}" if d.site else ""
        add(f"  {d.workload} [{d.schedule}]: {hardware(d)}{where}")
        add(f"      layout   {layout(d)}")
        add(f"      memory   {memory(d)}")
        add(f"      speed    {work(d)}")
        goal = against(d)
        if goal is not None:
            add(f"      target   {goal}")
        for i, line in enumerate(goodput_lines(d, cur)):
            add(f"      {'run' if i == 0 else '':<8} {line}")
        if d.mode == "cloud":
            add(f"      rental   {hours(d.rental_hours)} over the horizon")
        if d.delivery:
            add(f"      delivery {d.delivery}")
        if d.split:
            add(f"      split    {d.split}")
        for line in d.serving:
            add(f"      serving  {line}")
        for line in d.calibration:
            add(f"      calib    {line}")
    if plan.sites:
        add("")
        add("Sites")
        for s in plan.sites:
            servers = ", ".join(f"{n} x {k}" for k, n in s.servers.items())
            add(
                f"  {s.offer} ({s.city}, {s.region}, {s.cooling}): {s.racks} rack(s) of "
                f"{s.rack_kw:g} kW; {servers}; {s.power_kw:g} kW peak"
            )
            for i, fill in enumerate(s.fill, 1):
                content = ", ".join(f"{n} x {k}" for k, n in fill.items()) or "network switches"
                used = ""
                if s.fill_kw:
                    used = f" ({rack_use(s.fill_kw[i - 1], s.rack_kw, s.reserved_kw)})"
                add(f"      rack {i}: {content}{used}")
    lines += inventory_text(plan.inventory, cur)
    if plan.cost:
        add("")
        lines += cost_lines(plan.cost)
    if plan.bom:
        add("")
        lines += bom_text(plan)
    if plan.binding:
        add("")
        add("Binding constraints")
        for bound in plan.binding:
            add(f"  {bound.detail}")
    slack = [f"  {b.detail}" for b in plan.budgets_not_binding]
    _section(add, "Budgets not binding", slack)
    financed = [f"  {line}" for line in financed_lines(plan)]
    _section(add, "Financed servers (the rest paid in cash)", financed)
    unmet = [
        f"  {u.workload}: {u.rule} ({u.source}) {u.reason or u.judged}: {u.why}"
        for u in plan.unmet_preferences
    ]
    _section(add, "Preferences no allowed option meets (no penalty charged)", unmet)
    held = [f"  {margin_miss_line(m, cur)}" for m in plan.margin_misses]
    _section(add, "Kept out by the margin alone (the plan does not weigh these)", held)
    lines += scenarios_text(plan)
    _rules_and_advice(plan, add)
    if plan.alternatives:
        add("")
        add("Next-best plans")
        for alt in plan.alternatives:
            add(f"  #{alt.rank}: {alt.differs}")
            add(f"      TCO {money(alt.tco, cur)}, penalties {money(alt.penalties, cur)}")
            if alt.compared is not None:
                add(f"      {alt.compared.summary}")
    _why_not(plan, add)
    lines += sensitivity_text(plan.sensitivity, cur)
    lines += risk_text(plan.risk, cur)
    lines += compliance_text(plan) + sources_text(plan)
    _warnings_and_prices(plan, add)
    add("")
    wall = f", {plan.solver.wall_s:.2f} s" if plan.solver.wall_s is not None else ""
    info = plan.solver
    add(f"Solver: CP-SAT {info.status}, {info.workers} worker(s), seed {info.seed}{wall}")
    return "\n".join(lines) + "\n"


def margin_miss_line(m: MarginMiss, currency: str) -> str:
    """One candidate the margin keeps out, and the margin that would let it in."""
    let_in = m.margin_to_let_in()
    what = f"{m.servers} x {m.candidate} ({m.gpus} GPUs)"
    if m.rental_cost is not None:
        what = f"renting {what}, {money(m.rental_cost, currency)} over the horizon,"
    return (
        f"{m.workload}: {what} takes {m.hours:,.1f} h: within the deadline of "
        f"{m.deadline_hours:,.0f} h as written ({m.spare:.1%} spare), not with the "
        f"{m.margin:.0%} margin ({m.deadline_hours / (1 + m.margin):,.1f} h); "
        f"`margin: {let_in:g}` on {m.workload} lets the plan weigh it"
    )


def _section(add: Callable[[str], None], title: str, rows: list[str]) -> None:
    """A blank line, the title and its rows; nothing when there are no rows."""
    if rows:
        add("")
        add(title)
        for row in rows:
            add(row)


def _rules_and_advice(plan: Plan, add: Callable[[str], None]) -> None:
    fired = [
        f"  {r.rule} ({r.source}) {r.title}  [{', '.join(r.workloads)}]" for r in plan.rules_fired
    ]
    _section(add, "Rules fired", fired)
    _section(add, "Advice", [f"  - {a}" for a in plan.advice])


def _best_found(plan: Plan) -> str:
    """A merely feasible plan says how far from the proven bound it may be."""
    info = plan.solver
    if info.gap is None or info.best_bound is None:
        return f"best found ({plan.status}), optimality not proven"
    return (
        f"best found ({plan.status}) in the time limit: within {info.gap:.2%} of the "
        f"best bound {info.best_bound:,.0f}"
    )


def _warnings_and_prices(plan: Plan, add: Callable[[str], None]) -> None:
    _section(add, "Warnings", [f"  ! {w}" for w in plan.warnings])
    prices = [f"  - {item}" for item in plan.illustrative_prices]
    _section(add, "Illustrative prices (not quotes; confirm before buying)", prices)


def _timed_out(plan: Plan) -> str:
    assert plan.timed_out is not None
    lines = ["No plan found within the time limit (not proven impossible).", ""]
    lines.append(f"  {plan.timed_out.reason}")
    out: list[str] = []
    _rules_and_advice(plan, out.append)
    _warnings_and_prices(plan, out.append)
    return "\n".join(lines + out) + "\n"


def _why_not(plan: Plan, add: Callable[[str], None]) -> None:
    if plan.why_not:
        add("")
        add("Why not")
        for workload, reasons in plan.why_not.items():
            for r in reasons:
                add(f"  {workload}: {r}")


def _infeasible(plan: Plan) -> str:
    lines = ["No feasible plan."]
    inf = plan.infeasibility
    if inf is not None:
        lines.append(f"  {inf.reason}")
        for workload, reasons in inf.workloads_without_candidates.items():
            lines.append(f"  {workload}: no candidate fits")
            lines.extend(f"    - {r}" for r in reasons)
        if inf.conflicting:
            lines.append("  These requirements conflict:")
            for r in inf.conflicting:
                lines.append(f"    - {r.detail}")
                if r.suggestion:
                    lines.append(f"      {r.suggestion}")
    out: list[str] = []
    _why_not(plan, out.append)
    _rules_and_advice(plan, out.append)
    out += compliance_text(plan)
    _warnings_and_prices(plan, out.append)
    return "\n".join(lines + out) + "\n"
