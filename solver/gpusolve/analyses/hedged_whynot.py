"""`--why-not ID` on a plan hedged over a `scenarios:` block.

Per workload: the rejections involving the item in the scenario the plan shows; then, when
no scenario's plan uses the item for it, the hedged plan with that workload forced onto the
item in every scenario (`whynot.forced_onto` on each scenario's instance), solved as the
two-stage model and compared with the hedged plan by what the hedge minimises (expected or
worst-case TCO plus penalties), and, in the scenario shown, figure by figure
(`itemise.compare`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gpusolve.analyses.hedged_sensitivity import hedged_tco
from gpusolve.analyses.whynot import compare_forced, forced_onto, rejection_lines, uses_item
from gpusolve.candidates.generate import OptionMeta
from gpusolve.explain import lines as itemise
from gpusolve.models.plan import WhyNot
from gpusolve.optimize import ir
from gpusolve.optimize import scenarios as two

if TYPE_CHECKING:
    from gpusolve.plan.twostage import Prepared


@dataclass(frozen=True)
class HedgedContext:
    """The hedged plan and what it was solved over."""

    scenarios: Sequence[two.Scenario]  # the declared scenarios, as the two-stage model has them
    metas: Sequence[dict[str, OptionMeta]]  # each scenario's `Candidates.meta`
    hedged: two.TwoStageResult
    robust: two.Robust
    config: ir.SolveConfig


def hedged_why_not(
    item: str, ctx: HedgedContext, shown: ir.Solution, where: Prepared
) -> tuple[dict[str, list[str]], list[WhyNot]]:
    """The `--why-not` lines per workload, and the forced plans behind them in the
    scenario shown (`where`, whose plan is `shown`)."""
    cand = where.cand
    out: dict[str, list[str]] = {}
    forced_plans: list[WhyNot] = []
    chosen = {c.workload: c for c in shown.choices}
    for w in cand.instance.workloads:
        lines = rejection_lines(item, w, cand, where.catalog)
        c = chosen.get(w)
        if c is not None and uses_item(item, cand.meta[c.option], c.site):
            out[w] = [f"{item} is in the chosen plan", *lines]
            continue
        elsewhere = _using(item, w, ctx)
        if elsewhere:
            out[w] = [f"{item} is in the hedged plan in scenario {', '.join(elsewhere)}", *lines]
            continue
        line, report = _forced_line(item, w, ctx, where, shown)
        if line is None:
            out[w] = lines or [f"no candidate for {w} uses {item}"]
            continue
        out[w] = [*lines, line]
        if report is not None:
            forced_plans.append(report)
    return out, forced_plans


def _using(item: str, workload: str, ctx: HedgedContext) -> list[str]:
    """The scenarios whose hedged plan runs `workload` on `item`."""
    names = []
    for s, meta in zip(ctx.scenarios, ctx.metas, strict=True):
        outcome = ctx.hedged.outcomes.get(s.name)
        choices = outcome.choices if outcome is not None else ()
        if any(c.workload == workload and uses_item(item, meta[c.option], c.site) for c in choices):
            names.append(s.name)
    return names


def _forced_line(
    item: str, workload: str, ctx: HedgedContext, where: Prepared, shown: ir.Solution
) -> tuple[str | None, WhyNot | None]:
    """The line comparing the plan with `workload` forced onto `item` (None when no
    scenario has a candidate for it there), and that plan against `shown` in the scenario
    the plan shows."""
    forced: list[two.Scenario] = []
    missing: list[str] = []
    for s, meta in zip(ctx.scenarios, ctx.metas, strict=True):
        instance = forced_onto(s.instance, workload, item, meta)
        if instance is None:
            missing.append(s.name)
        else:
            forced.append(replace(s, instance=instance))
    if len(missing) == len(ctx.scenarios):
        return None, None
    if missing:  # every scenario must be met: no hedged plan runs it there
        return f"no candidate for {workload} uses {item} in scenario {', '.join(missing)}", None
    alt = two.solve_two_stage(forced, ctx.config, ctx.robust)
    if alt.first is None:
        return (
            f"{workload} on {item} admits no plan that meets every scenario with the other "
            "workloads' needs",
            None,
        )
    before = hedged_tco(ctx.hedged, ctx.scenarios, ctx.robust, penalties=True)
    delta = hedged_tco(alt, forced, ctx.robust, penalties=True) - before
    what = f"{ctx.robust} TCO + penalties"
    change = itemise.change(what, delta, where.reqs.currency, ("dearer", "cheaper"))
    other = alt.outcomes.get(where.name)
    if other is None:  # the scenario shown is not one the hedge weighs
        return f"feasible with {workload} on {item}: {change}", None
    report = compare_forced(workload, item, where.cand, shown, other, where.reqs, where.catalog)
    line = f"feasible with {workload} on {item}: {change}; in scenario {where.name}: "
    return line + report.compared.summary, report
