"""The placement predicates of a rule set, judged without a workload (for `gpusolve colo`).

`plan` judges every placement (a deployment at a colo site) with the workload's rules: the
`offer` predicates and the `deployment` predicates that read `offer` (candidates/options.py
`_placements`, through `RulesPolicy.failed/penalty("offer", ...)`). `placement_policy`
puts the same compiled predicates into the same `RulesPolicy`, so a caller that judges a
placement with the same calls agrees with `plan` on which placements a rule refuses or
penalises.

Without a workload, a rule is kept only if it holds for any workload: its `when` reads
nothing (it fires for every workload) and its placement predicates read only what the
caller states (the `roots` it names, and of `deployment` the fields it names). Every
predicate left out is reported (`Unjudged`), with the first thing it reads that is missing.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass

from gpusolve.models.catalog import Catalog
from gpusolve.models.params import Params
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.rules.bindings import Bindings
from gpusolve.rules.engine import WorkloadRules
from gpusolve.rules.environment import ActivationCache, params_facts
from gpusolve.rules.loader import CompiledPredicate, CompiledRule, RuleSet
from gpusolve.rules.policy import RulesPolicy


@dataclass(frozen=True)
class Unjudged:
    """A rule, or one placement predicate of it, that cannot be judged without a workload."""

    rule: str
    source: str
    reads: str  # what it reads that is not stated: "deployment.tp", or the `when`'s roots
    kind: str | None = None  # the predicate's kind ("offer", "deployment"); None: the `when`
    which: str | None = None  # "require" or "prefer"; None: the `when`


@dataclass(frozen=True)
class PlacementPolicy:
    """The placement predicates that hold for any workload, in `plan`'s policy object."""

    policy: WorkloadPolicy
    judged: tuple[str, ...]  # ids of the rules with a predicate in `policy`
    unjudged: tuple[Unjudged, ...]  # in rule order; a rule may appear more than once


def is_placement(kind: str, predicate: CompiledPredicate) -> bool:
    """Whether `plan` checks this predicate per placement (per layout and site)."""
    return kind == "offer" or (kind == "deployment" and "offer" in predicate.reads)


def unstated_read(
    predicate: CompiledPredicate, roots: Set[str], deployment_fields: Set[str]
) -> str | None:
    """The first thing the predicate reads that the caller does not state, or None."""
    for path in sorted(predicate.program.paths):
        root = path[0]
        if root in roots:
            continue
        if root == "deployment" and (len(path) == 1 or path[1] in deployment_fields):
            continue
        return ".".join(path)
    return None


def placement_policy(
    ruleset: RuleSet,
    catalog: Catalog,
    *,
    roots: Set[str],
    deployment_fields: Set[str],
    workload: str,
) -> PlacementPolicy:
    """The placement predicates of `ruleset` that hold for any workload and read only
    `roots` and the `deployment_fields`, compiled into the policy `plan` uses (named
    `workload`, with the default parameters)."""
    params = Params()
    requires: dict[str, list[CompiledPredicate]] = {}
    prefers: dict[str, list[CompiledPredicate]] = {}
    judged: list[str] = []
    unjudged: list[Unjudged] = []
    for rule in ruleset.rules:
        mine = _placement_predicates(rule)
        if not mine:
            continue
        reads = sorted(rule.when.variables_read())
        if reads:
            unjudged.append(Unjudged(rule.id, rule.source, ", ".join(reads)))
            continue
        if rule.when.evaluate(Bindings(params_facts(params))) is not True:
            continue  # never fires
        kept = False
        for which, kind, predicate in mine:
            unknown = unstated_read(predicate, roots, deployment_fields)
            if unknown is not None:
                unjudged.append(Unjudged(rule.id, rule.source, unknown, kind, which))
                continue
            target = requires if which == "require" else prefers
            target.setdefault(kind, []).append(predicate)
            kept = True
        if kept:
            judged.append(rule.id)
    rules = WorkloadRules(
        workload=workload,
        params=params,
        requires=requires,
        prefers=prefers,
        advice=[],
        trace=[],
        param_origin={},
        _context=(params_facts(params),),
    )
    policy = RulesPolicy(rules, ActivationCache(catalog.cards), catalog)
    return PlacementPolicy(policy, tuple(judged), tuple(unjudged))


def _placement_predicates(rule: CompiledRule) -> list[tuple[str, str, CompiledPredicate]]:
    out = [("require", k, p) for k, p in rule.requires.items() if is_placement(k, p)]
    out += [("prefer", k, p) for k, p in rule.prefers.items() if is_placement(k, p)]
    return out
