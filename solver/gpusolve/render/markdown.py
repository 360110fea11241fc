"""A plan as a procurement memo in Markdown."""

from __future__ import annotations

from gpusolve.models.plan import Plan
from gpusolve.render.fmt import hardware, layout, memory, money, work


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
        return "\n".join(out) + "\n"
    c = plan.cost
    cur = c.currency
    add(
        f"Objective **{plan.objective}**, "
        f"{'proven optimal' if plan.solver.proven_optimal else _feasible(plan)}. "
        f"Total cost of ownership over {c.horizon_months} months: **{money(c.tco, cur)}** "
        f"(capex {money(c.capex, cur)}, {money(c.monthly_opex, cur)} per month)."
    )
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
        add("| offer | city | cooling | racks | rack kW | servers | peak kW |")
        add("|---|---|---|---|---|---|---|")
        for s in plan.sites:
            servers = ", ".join(f"{n}× {k}" for k, n in s.servers.items())
            add(
                f"| {s.offer} | {s.city} ({s.region}) | {s.cooling} | {s.racks} | "
                f"{s.rack_kw:g} | {servers} | {s.power_kw:g} |"
            )
    b = c.breakdown
    add("")
    add("## Cost")
    add("")
    add(f"| item | {cur} |")
    add("|---|---:|")
    for label, value in (
        ("Servers (capex)", b.servers_capex),
        ("Rack rent", b.rack_rent),
        ("Energy", b.energy),
        ("Bandwidth", b.bandwidth),
        ("Cloud rental", b.cloud_rental),
    ):
        add(f"| {label} | {value:,.0f} |")
    add(f"| **Total** | **{c.tco:,.0f}** |")
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
            f"{a.rank}. {a.differs}: {money(a.tco, cur)} (+{money(a.delta, cur)})"
            for a in plan.alternatives
        )
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


def _feasible(plan: Plan) -> str:
    """Feasible, not proven optimal: with the gap to the proven bound when there is one."""
    info = plan.solver
    if info.gap is None or info.best_bound is None:
        return f"{plan.status} (optimality not proven)"
    return f"{plan.status} (within {info.gap:.2%} of the best bound {info.best_bound:,.0f})"
