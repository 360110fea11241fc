"""The rules `plan` applies to a placement (a deployment at a colo site), for `colo`.

`plan` judges every placement with the workload's rules: the `offer` predicates and the
`deployment` predicates that read `offer`. `colo` judges a fleet line at an offer with the
same calls on the same compiled rules (`gpusolve.rules.placement` picks them), so the two
commands agree on which placements a rule refuses or penalises.

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
from gpusolve.models.policy import Charge, RuleHit, WorkloadPolicy, charges
from gpusolve.rules.loader import RuleSet
from gpusolve.rules.placement import Unjudged, placement_policy

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

    policy: WorkloadPolicy
    judged: tuple[str, ...]
    skipped: tuple[Skipped, ...]


@dataclass(frozen=True)
class Verdict:
    """One fleet line at one offer: the require-rules it fails and the prefer-charges."""

    failed: tuple[RuleHit, ...]
    charged: tuple[Charge, ...]


def placement_rules(ruleset: RuleSet, catalog: Catalog) -> PlacementRules:
    """The placement predicates of `ruleset` that hold for any workload, compiled into the
    same policy object `plan` uses."""
    found = placement_policy(
        ruleset, catalog, roots=CATALOGUE_ROOTS, deployment_fields=LINE_FACTS, workload="fleet"
    )
    skipped = (Skipped(u.rule, u.source, _why(u)) for u in found.unjudged)
    return PlacementRules(found.policy, found.judged, tuple(dict.fromkeys(skipped)))


def _why(unjudged: Unjudged) -> str:
    if unjudged.which is None:
        return f"its `when` reads {unjudged.reads}: it depends on the workload"
    what = f"{unjudged.kind} {unjudged.which}"
    return f"its {what} reads {unjudged.reads}, which a fleet does not state"


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
    # A preference is priced on what the servers it judges cost, as `plan` prices it.
    base = server.price * int(layout.get("nodes", 1))
    charged = charges("offer", rules.policy.penalty("offer", offer, context), base)
    return Verdict(tuple(failed), charged)
