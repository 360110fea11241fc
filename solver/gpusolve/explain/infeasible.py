"""Why there is no plan, in the user's words, with what relaxing each requirement needs."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import Any

from gpusolve.candidates.generate import build_candidates
from gpusolve.candidates.margin import margin_of
from gpusolve.candidates.market import RULE_ID as EXPORT_RULE
from gpusolve.candidates.records import Candidates, Rejection
from gpusolve.models.catalog import Catalog
from gpusolve.models.params import Params
from gpusolve.models.plan import Infeasibility, Relaxation
from gpusolve.models.policy import Penalty, RuleHit, WorkloadPolicy
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir

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
    without = {w: summarise(cand.rejections.get(w, [])) for w in missing}
    if found is None:
        return Infeasibility(
            reason="the solver proved that no plan exists, but every stated requirement "
            "can hold at once: the limit is in the hardware itself (rack packing, the "
            "catalogue's sizes); --why-not ID tells what stopped a given card or site",
            workloads_without_candidates=without,
        )
    if not found.conflict:
        return Infeasibility(
            reason="no plan exists (proven), but the explanation ran out of time before "
            "finding which requirements conflict; try a longer --time-limit",
            workloads_without_candidates=without,
            minimal=False,
            timed_out=True,
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
    if not found.minimal:
        reason += (
            " (the explanation ran out of time before proving each one necessary, so some "
            "may not be; a longer --time-limit narrows the list)"
        )
    if fix:
        reason += "; the easiest fix is to relax: " + "; ".join(fix)
    return Infeasibility(
        reason=reason,
        conflicting=conflicting,
        workloads_without_candidates=without,
        minimal=found.minimal,
        timed_out=found.timed_out,
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
    kind, _, subject = name.partition(":")
    if name in ("capex", "monthly", "total") or kind in ("racks", "deadline"):
        return _move(name, relaxed, reqs, config)
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


def _move(name: str, relaxed: Candidates, reqs: Requirements, config: ir.SolveConfig) -> str:
    """How far a numeric requirement must move, solved with every other one enforced.

    Only a move in the right direction and by a positive amount is printed: a relaxation
    that finds a plan within the current limit (the requirement does not block the plan
    on its own terms) or runs out of time says so instead of printing a negative move."""
    from gpusolve.optimize.explain import relaxation

    kind, _, subject = name.partition(":")
    seconds: dict[str, int] | None = None
    deadline_s: int | None = None
    if kind == "deadline":
        w = next((w for w in reqs.workloads if w.name == subject), None)
        if w is None or w.deadline_hours is None:
            return "extend the deadline"
        deadline_s = math.floor(w.deadline_hours * 3600)
        # A run must finish by deadline / (1 + margin): the deadline as written that
        # admits it is its time x (1 + margin).
        stretch = 1 + margin_of(w, reqs)
        seconds = {
            key: math.ceil((m.estimate.time_to_train_s or 0) * stretch)
            for key, m in relaxed.meta.items()
            if m.workload == subject
        }
    r = relaxation(relaxed.instance, name, config, seconds, deadline_s)
    if r is None:
        return "relax it"
    if r.outcome == "not_enough":
        return "relaxing this alone is not enough: another requirement listed must move too"
    if r.outcome == "unknown" or r.needed is None or r.delta is None:
        return "how far it must move was not found within the time limit"
    if r.delta <= 0:
        # A plan within the current limit with the others enforced contradicts the proof
        # of infeasibility; print no move rather than one in the wrong direction.
        return "no move of this limit alone was found to help"
    unsure = "" if r.outcome == "least" else "; a smaller move may do: the search ran out of time"
    cur = reqs.currency
    if kind == "deadline":
        needed_h = math.ceil(r.needed / 360) / 10  # rounded up to 0.1 h: still enough
        later_h = needed_h - r.current / 3600
        return (
            f"feasible only with a deadline {_hours(later_h)} later "
            f"(at least {_hours(needed_h)}){unsure}"
        )
    if kind == "racks":
        return f"feasible with {r.needed} racks at {subject} ({r.delta} more){unsure}"
    cap = {"capex": "capex cap", "monthly": "monthly cap"}.get(name, "total cap")
    return f"feasible if the {cap} is {r.delta:,} {cur} higher (at least {r.needed:,}){unsure}"


def _hours(h: float) -> str:
    """Hours, with enough decimals that a positive amount never prints as zero."""
    return f"{h:,.1f} h" if h >= 0.1 else f"{h:.2g} h"


class _NoHeadroom:
    """A policy identical to another but with zero memory headroom."""

    def __init__(self, inner: WorkloadPolicy) -> None:
        self._inner = inner
        self.params: Params = replace(inner.params, headroom=0.0)

    def failed(self, kind: str, subject: Any, context: dict[str, Any]) -> list[RuleHit]:
        return self._inner.failed(kind, subject, context)

    def penalty(self, kind: str, subject: Any, context: dict[str, Any]) -> Penalty:
        return self._inner.penalty(kind, subject, context)

    def param_origin(self, name: str) -> str | None:
        return self._inner.param_origin(name)


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
