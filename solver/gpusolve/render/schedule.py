"""A purchase schedule (`plan` with `periods:`) as text."""

from __future__ import annotations

from gpusolve.models.schedule import Baseline, Running, Schedule, SchedulePeriod
from gpusolve.render.about import About
from gpusolve.render.fmt import markdown_safe
from gpusolve.render.markdown import cash_markdown
from gpusolve.render.sensitivity import sensitivity_markdown, sensitivity_text


def _money(value: int | None, currency: str) -> str:
    return "-" if value is None else f"{value:,} {currency}"


def _period_lines(p: SchedulePeriod, before: SchedulePeriod | None, currency: str) -> list[str]:
    """A period: what it buys and the racks when they change, what runs, what it spends."""
    lines = [f"P{p.index}  months {p.start_month}-{p.start_month + p.months}"]
    if p.bought:
        bought = ", ".join(f"{b.servers} x {b.server} @ {b.site}" for b in p.bought)
        lines.append(f"  buy:     {bought}")
    if before is None or p.racks != before.racks:
        racks = ", ".join(f"{n} @ {s}" for s, n in p.racks.items()) or "none"
        lines.append(f"  racks:   {racks}")
    for r in p.running:
        lines.append(f"  run:     {r.workload}: {_where(r)}")
    s = p.spend
    capex = f"capex {_money(s.capex, currency)}, " if s.capex else ""
    moved = f", workloads moved {_money(s.switching, currency)}" if s.switching else ""
    lines.append(f"  spend:   {capex}{_money(s.monthly, currency)}/month{moved}")
    return lines


def _where(r: Running) -> str:
    """Where a workload runs in a period; a split service's part says its share."""
    where = f"{r.count} x {r.server} @ {r.site}" if r.server else f"rent {r.count} x {r.offer}"
    if r.share < 1:
        part = "base load" if r.server else "burst"
        where += f" ({part}, {r.share:.0%} of the demand)"
    return where


def render_schedule(s: Schedule) -> str:
    cur = s.currency
    lines = [f"Purchase schedule over {s.horizon_months} months: {s.status}"]
    if s.reason:
        lines.append(f"  {s.reason}")
    if s.tco is not None:
        credited = any(p.spend.residual_value for p in s.periods)
        note = " (residual value credited)" if credited else ""
        lines.append(f"TCO {_money(s.tco, cur)}{note}")
    if s.penalties:
        lines.append(f"soft-rule penalties {_money(s.penalties, cur)} (not spent)")
    if s.resale:
        lines.append(f"owned servers sold: {_money(s.resale, cur)} credited (apart from the TCO)")
    lines += _proof_lines(s)
    lines.append("")
    for i, p in enumerate(s.periods):
        lines += _period_lines(p, s.periods[i - 1] if i else None, cur)
    if s.capex_by_year:
        lines.append("")
        lines.append("Capex per fiscal year")
        for y in s.capex_by_year:
            budget = f" of {_money(y.budget, cur)}" if y.budget is not None else ""
            lines.append(f"  year {y.year}: {_money(y.capex, cur)}{budget}")
    lines.append("")
    lines.append("Against the baselines (same model; saving in TCO + penalties)")
    for b in s.baselines:
        penalties = f" + penalties {_money(b.penalties, cur)}" if b.penalties else ""
        saving = f", saving {_money(b.saving, cur)}" if b.saving is not None else ""
        lines.append(f"  {b.name:<15} {b.status:<10} TCO {_money(b.tco, cur)}{penalties}{saving}")
        lines += _baseline_note(b)
    lines.append("")
    lines.append("Model notes")
    lines += [f"  - {n}" for n in s.model_notes]
    lines += _analyses_lines(s)
    lines += sensitivity_text(s.sensitivity, cur)
    return "\n".join(lines) + "\n"


def _proof_lines(s: Schedule) -> list[str]:
    """A schedule not proven optimal says how far it may be from the best: the proven
    bound on TCO + penalties less resale, and the gap (CP-SAT's definition)."""
    if s.status == "optimal" or s.best_bound is None:
        return []
    bound = f"best bound {_money(s.best_bound, s.currency)} on TCO + penalties"
    if s.objective is None:
        return [f"no schedule found: {bound} (a longer --work-limit may find one)"]
    gap = abs(s.objective - s.best_bound) / max(1, abs(s.objective))
    return [f"not proven optimal: {bound}, gap {gap:.1%} (a longer --work-limit may close it)"]


def _analyses_lines(s: Schedule) -> list[str]:
    """Why a schedule is infeasible, the next-best schedules, why not an item."""
    cur = s.currency
    lines: list[str] = []
    for inf in s.infeasibility:
        lines += ["", f"Why no {inf.schedule}: {inf.reason}"]
        if inf.conflicting and not inf.minimal:
            lines.append("  (not proved minimal within the time limit)")
        for c in inf.conflicting:
            lines.append(f"  - {c.detail}: {c.suggestion}")
    if s.alternatives:
        lines += ["", "Next-best distinct schedules (by what runs where; delta in TCO + penalties)"]
    for a in s.alternatives:
        delta = f"+{_money(a.delta, cur)}" if a.delta is not None else "-"
        bought = ", ".join(f"{b.servers} x {b.server} @ {b.site}" for b in a.bought) or "nothing"
        lines.append(f"  #{a.rank} TCO {_money(a.tco, cur)} ({delta}): {a.difference}")
        lines.append(f"      buys {bought}")
    if s.why_not is not None:
        lines += ["", f"Why not {s.why_not.item}"]
        lines += [f"  - {line}" for line in s.why_not.lines]
    return lines


def _baseline_note(b: Baseline) -> list[str]:
    """What a baseline decided elsewhere is (the single-period plan), and what it buys."""
    lines = [f"    {b.note}"] if b.note else []
    if b.bought:
        bought = ", ".join(f"{p.servers} x {p.server} @ {p.site}" for p in b.bought)
        lines.append(f"    buys at month 0: {bought}")
    return lines


def schedule_markdown(s: Schedule, about: About | None = None) -> str:
    """The schedule as a markdown memo: the figures, the periods, capex per year and the
    baselines side by side; with `about`, dated and signed (version, input file)."""
    cur = s.currency
    out = [f"# Purchase schedule over {s.horizon_months} months", ""]
    if about is not None:
        out += [f"_{about.line()}_", ""]
    out.append(f"Status {s.status}; TCO {_money(s.tco, cur)}.")
    if s.reason:
        out += ["", s.reason]
    out += ["", "| period | months | buy | racks | runs | capex | per month |"]
    out.append("|---|---|---|---|---|---:|---:|")
    for p in s.periods:
        bought = "; ".join(f"{b.servers} x {b.server} @ {b.site}" for b in p.bought) or "-"
        racks = "; ".join(f"{n} @ {site}" for site, n in p.racks.items()) or "none"
        runs = "; ".join(f"{r.workload}: {_where(r)}" for r in p.running)
        cells = [f"P{p.index}", f"{p.start_month}-{p.start_month + p.months}", bought, racks]
        cells += [runs, f"{p.spend.capex:,}", f"{p.spend.monthly:,}"]
        out.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    if s.capex_by_year:
        out += ["", "## Capex per fiscal year", "", "| year | capex | budget |", "|---|---:|---:|"]
        out += [f"| {y.year} | {y.capex:,} | {_money(y.budget, cur)} |" for y in s.capex_by_year]
    out += ["", "## Against the baselines (same model; saving in TCO + penalties)", ""]
    out += ["| baseline | status | TCO | penalties | saving |", "|---|---|---:|---:|---:|"]
    for b in s.baselines:
        out.append(
            f"| {b.name} | {b.status} | {_money(b.tco, cur)} | {b.penalties:,} | "
            f"{_money(b.saving, cur)} |"
        )
    notes = [line.strip() for b in s.baselines for line in _baseline_note(b)]
    if notes:
        out += ["", *[f"- {n}" for n in notes]]
    out += cash_markdown(s.cash)
    out += ["", "## Model notes", "", *[f"- {n}" for n in s.model_notes]]
    out += sensitivity_markdown(s.sensitivity, cur)
    return markdown_safe("\n".join(out) + "\n")
