"""Why there is no plan, in the user's words, with what relaxing each requirement needs."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from gpusolve.candidates.generate import Candidates, Rejection, build_candidates
from gpusolve.candidates.market import RULE_ID as EXPORT_RULE
from gpusolve.candidates.policy import Penalty, RuleHit, WorkloadPolicy
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import Infeasibility, Relaxation
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir
from gpusolve.params import Params

MAX_REASONS_PER_WORKLOAD = 8


def explain_infeasible(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    cand: Candidates,
    missing: list[str],
    config: ir.SolveConfig,
) -> Infeasibility:
    from gpusolve.optimize.explain import explain

    relaxed = build_candidates(reqs, catalog, policies, explain=True)
    hopeless = relaxed.workloads_without_options()
    if hopeless:
        return Infeasibility(
            reason="no hardware in the catalogue can run "
            + ", ".join(hopeless)
            + ", whatever the deadline, budget, regions or rules",
            conflicting=_headroom_relief(reqs, catalog, policies, hopeless),
            workloads_without_candidates={
                w: summarise(relaxed.rejections.get(w, [])) for w in hopeless
            },
        )
    found = explain(relaxed.instance, replace(config, workers=1))
    if found is None:
        return Infeasibility(
            reason="no plan was found within the time limit, but no requirement conflict "
            "was proved; try a longer --time-limit",
            workloads_without_candidates={
                w: summarise(cand.rejections.get(w, [])) for w in missing
            },
        )
    conflicting = [
        Relaxation(
            requirement=name,
            detail=found.requirements[name].description,
            suggestion=_suggest(name, relaxed, reqs, config),
        )
        for name in found.conflict
    ]
    fix = [found.requirements[n].description for n in found.correction if n in found.requirements]
    reason = "these requirements cannot all hold together"
    if fix:
        reason += "; the easiest fix is to relax: " + "; ".join(fix)
    return Infeasibility(
        reason=reason,
        conflicting=conflicting,
        workloads_without_candidates={w: summarise(cand.rejections.get(w, [])) for w in missing},
    )


def summarise(rejections: list[Rejection]) -> list[str]:
    """One line per rejected candidate, bounded; the rest counted by their first reason."""
    lines = [f"{r.candidate}: {r.reasons[0]}" for r in rejections if r.reasons]
    if len(lines) <= MAX_REASONS_PER_WORKLOAD:
        return lines
    rest = rejections[MAX_REASONS_PER_WORKLOAD:]
    by_rule = Counter(
        r.reasons[0].split(" (")[0] if r.reasons[0].startswith("rule ") else "other reasons"
        for r in rest
        if r.reasons
    )
    counts = ", ".join(f"{n} by {k}" for k, n in by_rule.most_common(3))
    return [
        *lines[:MAX_REASONS_PER_WORKLOAD],
        f"... and {len(rest)} more ({counts}); `--why-not ID` shows any one",
    ]


def _suggest(name: str, relaxed: Candidates, reqs: Requirements, config: ir.SolveConfig) -> str:
    from gpusolve.optimize.explain import relaxation

    cur = reqs.currency
    if name in ("capex", "monthly") or name.startswith("racks:"):
        r = relaxation(relaxed.instance, name, config)
        if r is None:
            return "relaxing this alone is not enough"
        if name == "capex":
            return f"feasible if the capex cap is {r.delta:,} {cur} higher (at least {r.needed:,})"
        if name == "monthly":
            return (
                f"feasible if the monthly cap is {r.delta:,} {cur} higher (at least {r.needed:,})"
            )
        return f"feasible with {r.needed} racks at {name[6:]} ({r.delta} more)"
    kind, _, subject = name.partition(":")
    if kind == "deadline":
        return _deadline_hint(subject, relaxed, reqs)
    if kind == "regions":
        regions = sorted(
            {
                relaxed.instance.sites[p.site].region
                for o in relaxed.instance.owned
                if o.workload == subject
                for p in o.placements
                if name in p.violates
            }
            | {
                o.region
                for o in relaxed.instance.cloud
                if o.workload == subject and name in o.violates
            }
        )
        return "allow one of: " + ", ".join(regions) if regions else "allow another region"
    if kind == "rule" and subject == EXPORT_RULE:  # the market filter, not a rule file
        return "add the cards you may buy to allow_restricted: (owned stock, a compliant channel)"
    if kind == "rule":
        return f"disable it (a --rules file with `disable: [{subject}]`) or override it"
    return "relax it"


def _deadline_hint(workload: str, relaxed: Candidates, reqs: Requirements) -> str:
    times = [
        (m.estimate.time_to_train_s / 3600, m)
        for m in relaxed.meta.values()
        if m.workload == workload and m.estimate.time_to_train_s
    ]
    deadline = next(w.deadline_hours for w in reqs.workloads if w.name == workload)
    if not times or deadline is None:
        return "extend the deadline"
    fastest, meta = min(times, key=lambda t: t[0])
    where = meta.server or f"cloud {meta.cloud_offer}"
    return (
        f"the fastest candidate ({meta.nodes} x {where}) needs {fastest:,.1f} h: "
        f"feasible only with a deadline {fastest - deadline:,.1f} h later ({fastest:,.1f} h)"
    )


class _NoHeadroom:
    """A policy identical to another but with zero memory headroom."""

    def __init__(self, inner: WorkloadPolicy) -> None:
        self._inner = inner
        self.params: Params = replace(inner.params, headroom=0.0)

    def failed(self, kind: str, subject: Any, context: dict[str, Any]) -> list[RuleHit]:
        return self._inner.failed(kind, subject, context)

    def penalty(self, kind: str, subject: Any, context: dict[str, Any]) -> Penalty:
        return self._inner.penalty(kind, subject, context)


def _headroom_relief(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    hopeless: list[str],
) -> list[Relaxation]:
    """If dropping the memory headroom would give a workload candidates, say so."""
    loose = {w: _NoHeadroom(p) if w in hopeless else p for w, p in policies.items()}
    again = build_candidates(reqs, catalog, loose, explain=True)
    fixed = [w for w in hopeless if w not in again.workloads_without_options()]
    return [
        Relaxation(
            requirement=f"headroom:{w}",
            detail=f"{policies[w].params.headroom:.0%} memory headroom for {w}",
            suggestion="candidates exist with less headroom; lower `headroom:` only if you "
            "accept the risk of out-of-memory under fragmentation (H29)",
        )
        for w in fixed
    ]
