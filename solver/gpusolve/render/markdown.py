"""A plan as a procurement memo in Markdown."""

from __future__ import annotations

from gpusolve.models.plan import Plan
from gpusolve.render.fmt import hardware, layout, memory, money, proof_scope, work


def plan_markdown(plan: Plan) -> str:
    out: list[str] = ["# GPU procurement plan", ""]
    add = out.append
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
        f"{'proven optimal' if plan.solver.proven_optimal else plan.status}. "
        f"Total cost of ownership over {c.horizon_months} months: **{money(c.tco, cur)}** "
        f"(capex {money(c.capex, cur)}, {money(c.monthly_opex, cur)} per month)."
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
    add("")
    add("_Prices marked illustrative in the catalogue are not quotes; confirm before buying._")
    return "\n".join(out) + "\n"
