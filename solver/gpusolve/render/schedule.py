"""A purchase schedule (`plan` with `periods:`) as text."""

from __future__ import annotations

from gpusolve.models.schedule import Schedule, SchedulePeriod


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
        where = f"{r.count} x {r.server} @ {r.site}" if r.server else f"rent {r.count} x {r.offer}"
        lines.append(f"  run:     {r.workload}: {where}")
    s = p.spend
    capex = f"capex {_money(s.capex, currency)}, " if s.capex else ""
    lines.append(f"  spend:   {capex}{_money(s.monthly, currency)}/month")
    return lines


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
    lines.append("")
    lines.append("Model notes")
    lines += [f"  - {n}" for n in s.model_notes]
    lines += _analyses_lines(s)
    return "\n".join(lines) + "\n"


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
