"""Finance views in words and tables: `plan --risk N` (the chosen plan's TCO at P10/P50/P90
over the draws, what was drawn and how, and with --replan how often each plan was the
cheapest) and `plan --cash --format csv` (the cash view month by month)."""

from __future__ import annotations

from gpusolve.models.money import Cash, Risk


def risk_lines(risk: Risk | None, currency: str) -> list[str]:
    """The risk block as plain lines (text and Markdown share them)."""
    if risk is None:
        return []
    out = [
        f"TCO of this plan over {risk.draws:,} draws (seed {risk.seed}): P10 {risk.p10:,.0f}, "
        f"P50 {risk.p50:,.0f}, P90 {risk.p90:,.0f} {currency} (mean {risk.mean:,.0f}).",
    ]
    if risk.deadline_missed:
        out.append(f"A training run misses its deadline in {risk.deadline_missed:.1%} of draws.")
    if risk.shortfall_by_workload:
        each = ", ".join(f"{w} {share:.1%}" for w, share in risk.shortfall_by_workload.items())
        out.append(
            f"The plan falls short of the drawn demand in {risk.shortfall:.1%} of draws "
            f"({each}); a share of draws, not priced: the plan prices no demand left unmet"
            + ("" if risk.replanned else " (--replan plans each draw to meet it)")
            + "."
        )
    out += [f"Drawn: {d}." for d in risk.distributions] or ["Drawn: nothing has a range."]
    out.append(f"Held: {risk.held}.")
    if risk.replanned:
        out.append(f"Re-planned each draw on the {risk.ran_on}; the cheapest plan was:")
        out += [
            f"  {p.share:.1%} of draws ({p.draws}): {p.plan} (mean TCO {p.mean_tco:,.0f})"
            for p in risk.replanned[:5]
        ]
    return out


def risk_text(risk: Risk | None, currency: str) -> list[str]:
    lines = risk_lines(risk, currency)
    return ["", "Risk", *(f"  {line}" for line in lines)] if lines else []


def risk_markdown(risk: Risk | None, currency: str) -> list[str]:
    lines = risk_lines(risk, currency)
    if not lines:
        return []
    return ["", "## Risk over many draws", "", *(f"- {line.strip()}" for line in lines)]


CASH_COLUMNS = (
    "month",
    "purchases",
    "financing",
    "running",
    "upkeep",
    "total",
    "cumulative",
    "present_value",
)


def cash_csv(cash: Cash, currency: str) -> str:
    """`plan --cash --format csv`: the cash view month by month for a spreadsheet, each
    month's total also at present value (the NPV is the last column's sum)."""
    from gpusolve.render.bom_tables import csv_text

    factor = 1.0 / (1.0 + cash.discount_rate)
    rows, total = [], 0.0
    for m in cash.months:
        total += m.total
        present = m.total * factor ** ((m.month - 1) / 12)
        cells = [m.purchases, m.financing, m.running, m.upkeep, m.total, total]
        rows.append([str(m.month), *(f"{v:.0f}" for v in cells), f"{present:.2f}"])
    header = [*CASH_COLUMNS[:-1], f"present_value_at_{cash.discount_rate:.2%}_{currency}"]
    return csv_text(header, rows)
