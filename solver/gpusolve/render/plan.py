"""A plan or a purchase schedule in the format asked for: text, json, yaml or markdown."""

from __future__ import annotations

import json

import yaml

from gpusolve.models.plan import Plan
from gpusolve.models.schedule import Schedule
from gpusolve.render.about import About
from gpusolve.render.text import plan_text

FORMATS = ("text", "json", "yaml", "markdown")


def render_plan(plan: Plan | Schedule, fmt: str, about: About | None = None) -> str:
    """The one render entry point for what `plan` found: a plan, or a schedule. `about`
    dates and signs a plan's Markdown memo and gives it the products' names."""
    if fmt == "json":
        return json.dumps(plan.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(
            plan.model_dump(mode="json"), sort_keys=False, allow_unicode=True, width=100
        )
    if isinstance(plan, Schedule):
        from gpusolve.render.schedule import render_schedule, schedule_markdown

        return schedule_markdown(plan, about) if fmt == "markdown" else render_schedule(plan)
    if fmt == "markdown":
        # Deferred: the memo and its tables are imported only when a memo is asked for.
        from gpusolve.render.markdown import plan_markdown

        return plan_markdown(plan, about)
    return plan_text(plan)
