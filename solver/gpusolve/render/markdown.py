"""A plan as a procurement memo in Markdown: the memo first (what to buy, where, what to
rent, capex, monthly opex, TCO, payback, what would change the decision), then the payment
schedule, then the details, each cost line once (the bill of materials merged in)."""

from __future__ import annotations

from collections.abc import Mapping

from gpusolve.explain.payments import is_credit
from gpusolve.models.money import Cash
from gpusolve.models.plan import Cost, CostItem, Plan
from gpusolve.render.about import About, named
from gpusolve.render.compliance import compliance_markdown, sources_markdown
from gpusolve.render.financing import financed_lines
from gpusolve.render.fmt import (
    COST_LABELS,
    goodput_parts,
    hardware,
    layout,
    markdown_safe,
    memory,
    money,
    objective_words,
    proof_scope,
    resale_words,
    work,
)
from gpusolve.render.inventory import inventory_markdown
from gpusolve.render.memo import (
    Memo,
    Rental,
    cash_periods,
    estimate_headline,
    located_source,
    memo,
    periods,
)
from gpusolve.render.risk import risk_markdown
from gpusolve.render.scenarios import scenarios_markdown
from gpusolve.render.sensitivity import sensitivity_markdown


def _runs_markdown(plan: Plan, cur: str) -> list[str]:
    """Each training run's steady state and what goodput adds, hours and money per run."""
    trained = [d for d in plan.deployments if d.goodput is not None]
    if not trained:
        return []
    out = ["", "### Training runs: time and cost per run, goodput's parts", ""]
    for d in trained:
        assert d.goodput is not None
        basis = f"; cost: {d.run_cost_basis}" if d.run_cost_basis else ""
        out += [f"**{d.workload}** (goodput {d.goodput.goodput:.1%}{basis})", ""]
        out += ["| part | hours | cost |", "|---|---:|---:|"]
        for label, h, amount in goodput_parts(d):
            cost = "-" if amount is None else money(amount, cur)
            out.append(f"| {label} | {h:,.2f} | {cost} |")
        out.append("")
    return out[:-1]


def _status(plan: Plan) -> str:
    return "interrupted, not proven optimal" if plan.status == "interrupted" else _feasible(plan)


def plan_markdown(plan: Plan, about: About | None = None) -> str:
    """The plan as a markdown memo, safe to show as HTML (`markdown_safe`). With `about`,
    it is dated and signed (version, input file) and names products, the catalogue ids in
    its appendix."""
    return markdown_safe(_plan_document(plan, about or About()))


def _plan_document(plan: Plan, about: About) -> str:
    out: list[str] = ["# GPU procurement plan", ""]
    add = out.append
    if about.made_on or about.version or about.inputs:
        out += [f"_{about.line()}_", ""]
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
    verdict = "proven optimal" if plan.solver.proven_optimal else _status(plan)
    add(f"Objective **{plan.objective}**, {verdict}; horizon {c.horizon_months} months, {cur}.")
    add("")
    m = memo(plan, about.names)
    assert m is not None  # the plan has a cost
    out += memo_markdown(m, about.names)
    financed = financed_lines(plan, about.names)
    if financed:
        out += ["", "**Financed servers** (the rest paid in cash)", ""]
        out += [f"- {line}" for line in financed]
    out += payments_markdown(plan)
    out += cash_markdown(plan.cash)
    add("")
    add("## Details")
    add("")
    net = (
        [f"The optimiser counts the TCO net of credits: {money(c.tco, cur)}."]
        if m.tco != c.tco
        else []
    )
    if c.penalties:
        net.append(
            f"Soft-rule penalties {money(c.penalties, cur)} steer the choice and are not spent; "
            f"{objective_words(c)} = {money(c.objective_value, cur)}."
        )
    if net:
        add(" ".join(net))
    scope = proof_scope(plan.solver)
    if scope:
        add(f"{scope[0].upper()}{scope[1:]}.")
    add("")
    add("### Deployments")
    add("")
    add("| workload | schedule | hardware | site | layout | memory | speed |")
    add("|---|---|---|---|---|---|---|")
    for d in plan.deployments:
        add(
            f"| {d.workload} | {d.schedule} | {hardware(d)} | {d.site or 'cloud'} | "
            f"{layout(d)} | {memory(d)} | {work(d)} |"
        )
    out.extend(_runs_markdown(plan, cur))
    if plan.sites:
        add("")
        add("### Colocation")
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
    out.extend(_cost_table(plan, c))
    out.extend(scenarios_markdown(plan))
    out += _section("What limits this plan", [f"- {x.detail} (`{x.name}`)" for x in plan.binding])
    out += _section(
        "Rules applied",
        [
            f"- `{r.rule}` ({r.source}): {r.title} — {', '.join(r.workloads)}"
            for r in plan.rules_fired
        ],
    )
    out += _section("Advice", [f"- {a}" for a in plan.advice])
    out += _section(
        "Alternatives considered",
        [
            f"{a.rank}. {a.differs}: TCO {money(a.tco, cur)}, penalties "
            f"{money(a.penalties, cur)}" + (f" ({a.compared.summary})" if a.compared else "")
            for a in plan.alternatives
        ],
    )
    out += _section(
        "Why not", [f"- **{w}**: {r}" for w, reasons in plan.why_not.items() for r in reasons]
    )
    out += sensitivity_markdown(plan.sensitivity, cur)
    out += risk_markdown(plan.risk, cur)
    out += compliance_markdown(plan) + sources_markdown(plan, about.names)
    out += _section("Warnings", [f"- {w}" for w in plan.warnings])
    add("")
    add("_Prices marked illustrative in the catalogue are not quotes; confirm before buying._")
    if plan.illustrative_prices:
        add("Illustrative prices in this plan: " + "; ".join(plan.illustrative_prices) + ".")
    return "\n".join(out) + "\n"


def _section(title: str, lines: list[str]) -> list[str]:
    """A `## title` section of `lines`; nothing when there are none."""
    return ["", f"## {title}", "", *lines] if lines else []


def _cell(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.2f}".removesuffix(".00")


def _cost_table(plan: Plan, c: Cost) -> list[str]:
    """Every line of the TCO once, with the bill of materials' quantity, unit and unit
    price, each source a numbered note; credits after the TCO paid; then each soft-rule
    penalty. The lines add up to the totals."""
    b = c.breakdown
    out = ["### Cost and bill of materials", ""]
    out += [f"Whole horizon ({c.horizon_months} months), {c.currency}; * illustrative price.", ""]
    out += [
        "| item | detail | quantity | unit | unit price | amount |",
        "|---|---|---:|---|---:|---:|",
    ]
    sources: list[str] = []

    def row(label: str, i: CostItem) -> str:
        note = ""
        source = located_source(plan, i)
        if source:
            if source not in sources:
                sources.append(source)
            note = f" [{sources.index(source) + 1}]"
        star = "*" if i.illustrative else ""
        detail = i.detail.replace("|", "/")
        return (
            f"| {label}: {i.subject} | {detail} | {_cell(i.quantity)} | {i.unit} | "
            f"{_cell(i.unit_price)}{star} | {i.amount:,.0f}{note} |"
        )

    paid = 0.0
    for kind, label in COST_LABELS.items():
        items = [i for i in b.items if i.kind == kind and not is_credit(i)]
        out += [row(label, i) for i in items]
        paid += sum(i.amount for i in items)
        if items:
            out.append(f"| **{label}** | | | | | **{getattr(b, kind):,.0f}** |")
    credits = [i for i in b.items if is_credit(i)]
    if credits:
        out.append(f"| **TCO paid (credits apart)** | | | | | **{paid:,.0f}** |")
        out += [row(COST_LABELS.get(i.kind, i.kind), i) for i in credits]
        net = paid + sum(i.amount for i in credits)
        out.append(f"| **TCO** | net of credits (not cash) | | | | **{net:,.0f}** |")
    else:
        out.append(f"| **TCO** | | | | | **{c.tco:,.0f}** |")
    if c.resale:
        out.append(
            f"| resale credit, owned servers sold now (apart from the TCO) | | | | | "
            f"{c.resale:,.0f} |"
        )
    end = c.horizon_resale
    if end is not None:
        out += ["", f"Resale credit {end.amount:,.0f} {c.currency} ({resale_words(c)})."]
    if sources:
        out += ["", *(f"{n}. {s}" for n, s in enumerate(sources, 1))]
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


def memo_markdown(m: Memo, names: Mapping[str, str] | None = None) -> list[str]:
    """The memo: buy, where, rent, the figures, and what would change the decision; with
    `names`, products by name (their ids are in the appendix)."""
    names = table_names(names)
    cur = m.currency
    out = ["## The decision", "", estimate_headline(m), "", "**Buy**", ""]
    servers = [b for b in m.buys if b.kind == "server"]
    if m.buys:
        out += ["| what | site | count | unit price | total |", "|---|---|---:|---:|---:|"]
        out += [
            f"| {names.get(b.item, b.item)} | {names.get(b.site, b.site) if b.site else '-'} | "
            f"{_cell(b.count)} | "
            f"{_cell(b.unit_price)}{_est(b.illustrative)} | {b.amount:,.0f} |"
            for b in servers
        ]
        out += [
            f"| {k.kind}: {k.summary} | {named(k.sites, names)} | | | "
            f"{k.amount:,.0f}{_est(k.illustrative)} |"
            for k in m.kits
        ]
    else:
        out.append("Nothing." if m.kept else "Nothing: every workload is rented.")
    if m.kept:
        out += ["", "Already owned (sunk, not in the capex or the TCO): " + "; ".join(m.kept) + "."]
    if m.sites:
        out += ["", "**Where**", ""]
        out += ["| site | city | racks | kW per rack | peak kW |", "|---|---|---:|---:|---:|"]
        out += [
            f"| {names.get(s.offer, s.offer)}{_est(s.offer in m.estimated_sites)} | {s.city} "
            f"({s.region}, "
            f"{s.cooling}) | {s.racks} | {s.rack_kw:g} | {s.power_kw:g} |"
            for s in m.sites
        ]
    if m.rents:
        out += ["", "**Rent**", ""]
        out += [f"| workload | what | over {m.horizon_months} months |", "|---|---|---:|"]
        out += [
            f"| {r.workload} | {_rented(r, names)} | {r.amount:,.0f}{_est(r.illustrative)} |"
            for r in m.rents
        ]
    out += ["", f"| figure | {cur} |", "|---|---:|"]
    out.append(f"| capex (at purchase) | {_cell(m.capex)} |")
    out.append(
        f"| opex over {m.horizon_months} months ({m.monthly_opex:,.0f} a month on average) "
        f"| {_cell(m.opex)} |"
    )
    out.append(f"| **TCO over {m.horizon_months} months (paid)** | **{_cell(m.tco)}** |")
    for credit in m.credits:
        out.append(
            f"| credit, apart from the TCO: {credit.label} (not cash; TCO net of credits "
            f"{_cell(m.net)}) | {_cell(credit.amount)} |"
        )
    payback = "n/a" if m.payback_month is None else f"month {m.payback_month}"
    if m.payback_month is None and m.rental_tco is not None:
        payback = "none within the horizon"
    out.append(f"| payback against the cheapest all-rental plan | {payback} |")
    out += ["", f"Payback: {m.payback}."]
    out += ["", "**What would change the decision**", ""]
    out += [f"{n}. {f}" for n, f in enumerate(m.facts, 1)]
    ids = "; product ids in the appendix" if names else ""
    out += [
        "",
        f"_From {m.facts_from}. \\* an illustrative price: an estimate, not a quote{ids}._",
    ]
    return out


def table_names(names: Mapping[str, str] | None) -> dict[str, str]:
    """Product names fit for a table cell: a `|` in a catalogue's name would split it."""
    return {k: v.replace("|", "/") for k, v in (names or {}).items()}


def _rented(r: Rental, names: Mapping[str, str]) -> str:
    """A rental in the memo: the offer by its product name when there is one."""
    if r.offer and r.offer in names:
        return f"rent {r.instances} x {names[r.offer]}"
    return r.what


def _est(illustrative: bool) -> str:
    """The mark of an illustrative price (an estimate, not a quote)."""
    return "\\*" if illustrative else ""


def cash_markdown(cash: Cash | None) -> list[str]:
    """Cash as it leaves the bank (payment terms, financing, upkeep) and its present value."""
    if cash is None:
        return []
    out = ["", "## Cash as it leaves the bank", "", f"{cash.basis}.", ""]
    out.append(
        f"Present value at {cash.discount_rate:.1%} a year ({cash.discount_basis}): "
        f"**{cash.npv:,.0f}**; cash paid {cash.nominal:,.0f} = TCO {cash.tco:,.0f} + interest "
        f"{cash.interest:,.0f} + upkeep {cash.upkeep:,.0f}."
    )
    out += ["", "| period | purchases | financing | running | upkeep | paid | cumulative |"]
    out.append("|---" + "|---:" * 6 + "|")
    for p in cash_periods(cash):
        cells = [p.purchases, p.financing, p.running, p.upkeep, p.total, p.cumulative]
        out.append(f"| {p.label} | " + " | ".join(f"{v:,.0f}" for v in cells) + " |")
    if cash.upkeep_basis:
        out += ["", "Upkeep: " + "; ".join(cash.upkeep_basis) + "."]
    return out


def payments_markdown(plan: Plan) -> list[str]:
    """The payment schedule by month (a year or less) or quarter, with the cumulative
    spend of the plan and of the cheapest all-rental plan."""
    rows = periods(plan)
    if not rows:
        return []
    rental = rows[0].rental_cumulative is not None
    out = ["", "## When the money is paid", "", f"{plan.payments_basis}.", ""]
    head = (
        "| period | purchases | rent and bandwidth | energy | cloud | other | paid | cumulative |"
    )
    out += [head + (" all-rental, cumulative |" if rental else "")]
    out += ["|---" + "|---:" * (8 if rental else 7) + "|"]
    for p in rows:
        cells = [p.capex, p.rent, p.energy, p.cloud, p.other, p.total, p.cumulative]
        if p.rental_cumulative is not None:
            cells.append(p.rental_cumulative)
        out.append(f"| {p.label} | " + " | ".join(f"{v:,.0f}" for v in cells) + " |")
    return out


def _feasible(plan: Plan) -> str:
    """Feasible, not proven optimal: with the gap to the proven bound when there is one."""
    info = plan.solver
    if info.gap is None or info.best_bound is None:
        return f"{plan.status} (optimality not proven)"
    return f"{plan.status} (within {info.gap:.2%} of the best bound {info.best_bound:,.0f})"
