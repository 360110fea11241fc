"""A plan as a procurement memo in Markdown."""

from __future__ import annotations

from gpusolve.models.plan import Cost, Plan
from gpusolve.render.bom_tables import bom_markdown
from gpusolve.render.compliance import compliance_markdown, sources_markdown
from gpusolve.render.fmt import (
    COST_LABELS,
    hardware,
    layout,
    memory,
    money,
    objective_words,
    proof_scope,
    resale_words,
    work,
)
from gpusolve.render.inventory import inventory_markdown
from gpusolve.render.scenarios import scenarios_markdown
from gpusolve.render.sensitivity import sensitivity_markdown


def _status(plan: Plan) -> str:
    return "interrupted, not proven optimal" if plan.status == "interrupted" else _feasible(plan)


def plan_markdown(plan: Plan) -> str:
    out: list[str] = ["# GPU procurement plan", ""]
    add = out.append
    if plan.timed_out is not None:
        add("**No plan found within the time limit** (not proven impossible).")
        add("")
        add(plan.timed_out.reason)
        return "\n".join(out) + "\n"
    if plan.status == "infeasible" or plan.cost is None:
        add("**No feasible plan.**")
        if plan.infeasibility:
            add("")
            add(plan.infeasibility.reason)
            for r in plan.infeasibility.conflicting:
                add(f"- {r.detail}" + (f" — {r.suggestion}" if r.suggestion else ""))
            for w, reasons in plan.infeasibility.workloads_without_candidates.items():
                add(f"- **{w}**: " + "; ".join(reasons))
        out += compliance_markdown(plan)
        return "\n".join(out) + "\n"
    c = plan.cost
    cur = c.currency
    add(
        f"Objective **{plan.objective}**, "
        f"{'proven optimal' if plan.solver.proven_optimal else _status(plan)}. "
        f"Total cost of ownership over {c.horizon_months} months: **{money(c.tco, cur)}** "
        f"(capex {money(c.capex, cur)}, {money(c.monthly_opex, cur)} per month)."
        + (
            f" Soft-rule penalties {money(c.penalties, cur)} (not spent); "
            f"{objective_words(c)} = {money(c.objective_value, cur)}."
            if c.penalties
            else ""
        )
    )
    scope = proof_scope(plan.solver)
    if scope:
        add(f"{scope[0].upper()}{scope[1:]}.")
    add("")
    add("## Deployments")
    add("")
    add("| workload | schedule | hardware | site | layout | memory | speed |")
    add("|---|---|---|---|---|---|---|")
    for d in plan.deployments:
        add(
            f"| {d.workload} | {d.schedule} | {hardware(d)} | {d.site or 'cloud'} | "
            f"{layout(d)} | {memory(d)} | {work(d)} |"
        )
    if plan.sites:
        add("")
        add("## Colocation")
        add("")
        add("| offer | city | cooling | racks | rack kW | reserved kW | servers | peak kW |")
        add("|---|---|---|---|---|---|---|---|")
        for s in plan.sites:
            servers = ", ".join(f"{n}× {k}" for k, n in s.servers.items())
            add(
                f"| {s.offer} | {s.city} ({s.region}) | {s.cooling} | {s.racks} | "
                f"{s.rack_kw:g} | {s.reserved_kw:g} | {servers} | {s.power_kw:g} |"
            )
    out.extend(inventory_markdown(plan.inventory, c.currency))
    add("")
    out.extend(_cost_table(c))
    if plan.bom:
        out += ["", *bom_markdown(plan)]
    out.extend(scenarios_markdown(plan))
    if plan.binding:
        add("")
        add("## What limits this plan")
        add("")
        out.extend(f"- {x.detail} (`{x.name}`)" for x in plan.binding)
    if plan.rules_fired:
        add("")
        add("## Rules applied")
        add("")
        out.extend(
            f"- `{r.rule}` ({r.source}): {r.title} — {', '.join(r.workloads)}"
            for r in plan.rules_fired
        )
    if plan.advice:
        add("")
        add("## Advice")
        add("")
        out.extend(f"- {a}" for a in plan.advice)
    if plan.alternatives:
        add("")
        add("## Alternatives considered")
        add("")
        out.extend(
            f"{a.rank}. {a.differs}: TCO {money(a.tco, cur)}, penalties "
            f"{money(a.penalties, cur)}" + (f" ({a.compared.summary})" if a.compared else "")
            for a in plan.alternatives
        )
    if plan.why_not:
        add("")
        add("## Why not")
        add("")
        out.extend(f"- **{w}**: {r}" for w, reasons in plan.why_not.items() for r in reasons)
    out += sensitivity_markdown(plan.sensitivity, cur)
    out += compliance_markdown(plan) + sources_markdown(plan)
    if plan.warnings:
        add("")
        add("## Warnings")
        add("")
        out.extend(f"- {w}" for w in plan.warnings)
    add("")
    add("_Prices marked illustrative in the catalogue are not quotes; confirm before buying._")
    if plan.illustrative_prices:
        add("Illustrative prices in this plan: " + "; ".join(plan.illustrative_prices) + ".")
    return "\n".join(out) + "\n"


def _cost_table(c: Cost) -> list[str]:
    """Every line of the TCO and each soft-rule penalty; the lines add up to the totals."""
    b = c.breakdown
    out = ["## Cost", "", f"Whole horizon ({c.horizon_months} months), {c.currency}.", ""]
    out += ["| item | detail | amount |", "|---|---|---:|"]
    for kind, label in COST_LABELS.items():
        items = [i for i in b.items if i.kind == kind]
        out += [f"| {label}: {i.subject} | {i.detail} | {i.amount:,.0f} |" for i in items]
        if items:
            out.append(f"| **{label}** | | **{getattr(b, kind):,.0f}** |")
    out.append(f"| **TCO** | | **{c.tco:,.0f}** |")
    if c.resale:
        out.append(
            f"| resale credit, owned servers sold now (apart from the TCO) | | {c.resale:,.0f} |"
        )
    end = c.horizon_resale
    if end is not None:
        out += ["", f"Resale credit {end.amount:,.0f} {c.currency} ({resale_words(c)}).", ""]
    if b.penalty_items:
        out += ["", "Soft-rule penalties: they steer the choice and are never spent.", ""]
        out += ["| rule | applies to | reason | amount |", "|---|---|---|---:|"]
        for p in b.penalty_items:
            src = f" ({p.source})" if p.source else ""
            out.append(
                f"| `{p.rule}`{src} | {p.workload}: {p.deployment} ({p.judged}) | {p.reason} | "
                f"{p.amount:,.0f} |"
            )
        out.append(f"| **penalties** | | | **{c.penalties:,.0f}** |")
        label = objective_words(c).replace(" ", " = ", 1)
        out.append(f"| **{label}** | | | **{c.objective_value:,.0f}** |")
    return out


def _feasible(plan: Plan) -> str:
    """Feasible, not proven optimal: with the gap to the proven bound when there is one."""
    info = plan.solver
    if info.gap is None or info.best_bound is None:
        return f"{plan.status} (optimality not proven)"
    return f"{plan.status} (within {info.gap:.2%} of the best bound {info.best_bound:,.0f})"
