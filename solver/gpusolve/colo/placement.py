"""The rules `plan` applies to a placement (a deployment at a colo site), for `colo`.

`plan` judges every placement with the workload's rules: the `offer` predicates and the
`deployment` predicates that read `offer` (candidates/generate.py `_placements`, through
`RulesPolicy.failed/penalty("offer", ...)`). `colo` judges a fleet line at an offer with
the same calls on the same compiled rules, so the two commands agree on which placements
a rule refuses or penalises.

A fleet says which servers run together, not what they run. So `colo` keeps the rules
it can decide without a workload: those whose `when` reads nothing (fires for every
workload) and whose predicate reads only the server, its card, the offer and the layout
facts a fleet line gives (nodes, GPUs, whether one job spans servers). Rules that depend on
the workload (training only, long runs, latency-sensitive serving ...) are listed as not
judged, with why; `plan` applies them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusolve.models.catalog import Catalog, ColoOffer, Server
from gpusolve.models.params import Params
from gpusolve.models.policy import Charge, RuleHit, charges
from gpusolve.rules.engine import WorkloadRules
from gpusolve.rules.environment import ActivationCache, params_facts
from gpusolve.rules.evaluate import Bindings
from gpusolve.rules.loader import CompiledPredicate, CompiledRule, RuleSet
from gpusolve.rules.policy import RulesPolicy

# The layout facts a fleet line states; a predicate reading any other `deployment` field
# (memory per GPU, TP degree, MFU ...) needs a sized workload, which only `plan` has.
LINE_FACTS = frozenset({"nodes", "gpus", "gpus_per_node", "multi_node", "mode"})
# Roots a placement predicate may read here; `cloud` is null for an owned placement,
# exactly as `plan` binds it.
CATALOGUE_ROOTS = frozenset({"server", "card", "offer", "cloud"})


@dataclass(frozen=True)
class Skipped:
    rule: str
    source: str
    why: str


@dataclass(frozen=True)
class PlacementRules:
    """The rules `colo` judges placements with, and those it cannot judge."""

    policy: RulesPolicy
    judged: tuple[str, ...]
    skipped: tuple[Skipped, ...]


@dataclass(frozen=True)
class Verdict:
    """One fleet line at one offer: the require-rules it fails and the prefer-charges."""

    failed: tuple[RuleHit, ...]
    charged: tuple[Charge, ...]


def is_placement(kind: str, predicate: CompiledPredicate) -> bool:
    """Whether `plan` checks this predicate per placement (per layout and site)."""
    return kind == "offer" or (kind == "deployment" and "offer" in predicate.reads)


def unjudged_read(predicate: CompiledPredicate) -> str | None:
    """The first thing the predicate reads that a fleet line does not state, or None."""
    for path in sorted(predicate.program.paths):
        root = path[0]
        if root in CATALOGUE_ROOTS:
            continue
        if root == "deployment" and (len(path) == 1 or path[1] in LINE_FACTS):
            continue
        return ".".join(path)
    return None


def placement_rules(ruleset: RuleSet, catalog: Catalog) -> PlacementRules:
    """The placement predicates of `ruleset` that hold for any workload, compiled into the
    same policy object `plan` uses."""
    params = Params()
    requires: dict[str, list[CompiledPredicate]] = {}
    prefers: dict[str, list[CompiledPredicate]] = {}
    judged: list[str] = []
    skipped: list[Skipped] = []
    for rule in ruleset.rules:
        mine = _placement_predicates(rule)
        if not mine:
            continue
        reads = sorted(rule.when.variables_read())
        if reads:
            why = f"its `when` reads {', '.join(reads)}: it depends on the workload"
            skipped.append(Skipped(rule.id, rule.source, why))
            continue
        if rule.when.evaluate(Bindings(params_facts(params))) is not True:
            continue  # never fires
        kept = False
        for which, kind, predicate in mine:
            unknown = unjudged_read(predicate)
            if unknown is not None:
                why = f"its {kind} {which} reads {unknown}, which a fleet does not state"
                skipped.append(Skipped(rule.id, rule.source, why))
                continue
            target = requires if which == "require" else prefers
            target.setdefault(kind, []).append(predicate)
            kept = True
        if kept:
            judged.append(rule.id)
    rules = WorkloadRules(
        workload="fleet",
        params=params,
        requires=requires,
        prefers=prefers,
        advice=[],
        trace=[],
        param_origin={},
        _context=(params_facts(params),),
    )
    policy = RulesPolicy(rules, ActivationCache(catalog.cards), catalog)
    return PlacementRules(policy, tuple(judged), tuple(dict.fromkeys(skipped)))


def _placement_predicates(rule: CompiledRule) -> list[tuple[str, str, CompiledPredicate]]:
    out = [("require", k, p) for k, p in rule.requires.items() if is_placement(k, p)]
    out += [("prefer", k, p) for k, p in rule.prefers.items() if is_placement(k, p)]
    return out


def line_layout(server: Server, count: int, multi_node: bool) -> dict[str, Any]:
    """A fleet line as the `deployment` rules see it. Only LINE_FACTS are ever read (the
    other predicates are not judged); the sizing fields a layout must carry are set to
    neutral values that no judged predicate reads."""
    nodes = count if multi_node else 1
    gpus = nodes * server.gpus
    return {
        "mode": "owned",
        "nodes": nodes,
        "gpus": gpus,
        "gpus_per_node": server.gpus,
        "multi_node": multi_node,
        "tp": 1,
        "pp": 1,
        "dp": gpus,
        "memory_per_gpu_gb": 0.0,
        "card_memory_gb": 0.0,
        "usable_memory_gb": 0.0,
        "comm_fraction": 0.0,
    }


def judge(
    rules: PlacementRules, server: Server, offer: ColoOffer, layout: dict[str, Any]
) -> Verdict:
    """The same calls `plan` makes for a layout of `server` placed at `offer`."""
    context = {"deployment": layout, "server": server}
    failed = rules.policy.failed("offer", offer, context)
    charged = charges("offer", rules.policy.penalty("offer", offer, context))
    return Verdict(tuple(failed), charged)
