"""A purchase schedule (`plan` with `periods:`) as text."""

from __future__ import annotations

from gpusolve.models.schedule import Schedule, SchedulePeriod


def _money(value: int | None, currency: str) -> str:
    return "-" if value is None else f"{value:,} {currency}"


def _period_lines(p: SchedulePeriod, currency: str) -> list[str]:
    head = f"P{p.index}  months {p.start_month}-{p.start_month + p.months}"
    lines = [head]
    bought = ", ".join(f"{b.servers} x {b.server} @ {b.site}" for b in p.bought) or "nothing"
    lines.append(f"  buy:     {bought}")
    racks = ", ".join(f"{n} @ {s}" for s, n in p.racks.items()) or "none"
    lines.append(f"  racks:   {racks}")
    for r in p.running:
        where = f"{r.count} x {r.server} @ {r.site}" if r.server else f"rent {r.count} x {r.offer}"
        lines.append(f"  run:     {r.workload}: {where}")
    s = p.spend
    lines.append(
        f"  spend:   capex {_money(s.capex, currency)}, then {_money(s.monthly, currency)}/month "
        f"(racks {s.rack_rent:,} for their term, energy {s.energy:,}, rental {s.cloud_rental:,})"
    )
    return lines


def render_schedule(s: Schedule) -> str:
    cur = s.currency
    lines = [f"Purchase schedule over {s.horizon_months} months: {s.status}"]
    if s.reason:
        lines.append(f"  {s.reason}")
    if s.tco is not None:
        lines.append(f"TCO {_money(s.tco, cur)} (residual value credited)")
    lines.append("")
    for p in s.periods:
        lines += _period_lines(p, cur)
    if s.capex_by_year:
        lines.append("")
        lines.append("Capex per fiscal year")
        for y in s.capex_by_year:
            budget = f" of {_money(y.budget, cur)}" if y.budget is not None else ""
            lines.append(f"  year {y.year}: {_money(y.capex, cur)}{budget}")
    lines.append("")
    lines.append("Against the baselines (same model)")
    for b in s.baselines:
        saving = f", saving {_money(b.saving, cur)}" if b.saving is not None else ""
        lines.append(f"  {b.name:<15} {b.status:<10} TCO {_money(b.tco, cur)}{saving}")
    lines.append("")
    lines.append("Model notes")
    lines += [f"  - {n}" for n in s.model_notes]
    return "\n".join(lines) + "\n"
