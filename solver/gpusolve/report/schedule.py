"""A purchase schedule (`plan` with `periods:`) as one self-contained HTML page: the
schedule per period, capex per fiscal year against its budget, the baselines side by side,
the timeline charts (spend per period by kind; capacity against demand per workload) each
with its table, and each period's bill of materials."""

from __future__ import annotations

from gpusolve.models.schedule import Schedule
from gpusolve.render.memo import cash_periods
from gpusolve.report import schedule_charts
from gpusolve.report.html import ReportContext, render_template


def schedule_html(s: Schedule, ctx: ReportContext | None = None) -> str:
    return render_template(
        "schedule.html.j2",
        s=s,
        ctx=ctx or ReportContext(),
        spend=schedule_charts.spend_rows(s),
        spend_chart=schedule_charts.spend_chart(s),
        capacity_chart=schedule_charts.capacity_chart(s),
        bom_total=[sum(ln.amount for ln in p.bom if ln.unit_price is not None) for p in s.periods],
        cash_periods=cash_periods(s.cash),
    )
