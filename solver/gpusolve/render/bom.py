"""`plan --bom`: the bill of materials alone, in the format asked for (the tables are
`bom_tables.py`'s, shared with the text and markdown reports)."""

from __future__ import annotations

from gpusolve.models.common import versioned
from gpusolve.models.plan import Plan
from gpusolve.models.schedule import Schedule
from gpusolve.render.bom_tables import CSV_COLUMNS, bom_csv, bom_markdown, bom_text
from gpusolve.render.fmt import markdown_safe
from gpusolve.render.plan import render_plan

__all__ = ["BOM_FORMATS", "CSV_COLUMNS", "render_bill", "render_bom"]

BOM_FORMATS = ("text", "csv", "json", "yaml", "markdown")


def render_bill(plan: Plan | Schedule, fmt: str) -> str:
    """The bill of materials of a plan, or of a schedule per purchase period."""
    if isinstance(plan, Schedule):
        from gpusolve.render.schedule_bom import render_schedule_bom

        return render_schedule_bom(plan, fmt)
    return render_bom(plan, fmt)


def render_bom(plan: Plan, fmt: str) -> str:
    """`plan --bom`: the bill of materials alone; a run without a plan (infeasible,
    timed out) prints its usual report, which says why there is nothing to buy."""
    if plan.cost is None or not plan.bom:
        return render_plan(plan, "text" if fmt == "csv" else fmt)
    if fmt == "csv":
        return bom_csv(plan.bom)
    if fmt in ("json", "yaml"):
        import json

        import yaml

        data = versioned("bom", {"lines": [ln.model_dump(mode="json") for ln in plan.bom]})
        if fmt == "json":
            return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    if fmt == "markdown":
        return markdown_safe("\n".join(bom_markdown(plan)) + "\n")
    return "\n".join(bom_text(plan)) + "\n"
