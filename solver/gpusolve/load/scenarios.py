"""The scenarios of a requirements file against the catalogue: every card id and workload
name a `scenarios:` block names must exist (located at its own line)."""

from __future__ import annotations

from gpusolve.errors import Problem
from gpusolve.load.yamlio import Document
from gpusolve.models.catalog import Catalog
from gpusolve.models.requirements import SCENARIO_ALL, Requirements


def scenario_problems(reqs: Requirements, catalog: Catalog, doc: Document) -> list[Problem]:
    """Card ids and workload names in the scenarios that the run does not know."""
    problems: list[Problem] = []
    cards = set(catalog.cards)
    workloads = {w.name for w in reqs.workloads}

    def problem(path: tuple[str | int, ...], what: str, hint: str) -> None:
        loc = doc.locate(path) or (None, None)
        problems.append(Problem(doc.name, loc[0], loc[1], what, hint))

    card_hint = "use a card id from `gpusolve catalog list --kind cards`"
    for i, s in enumerate(reqs.scenarios or []):
        base: tuple[str | int, ...] = ("scenarios", i)
        for card in s.efficiency:
            if card != SCENARIO_ALL and card not in cards:
                problem((*base, "efficiency", card), f"unknown card {card!r}", card_hint)
        for j, card in enumerate(s.unavailable):
            if card not in cards:
                problem((*base, "unavailable", j), f"unknown card {card!r}", card_hint)
        if isinstance(s.demand, dict):
            for name in s.demand:
                if name != SCENARIO_ALL and name not in workloads:
                    hint = f"use a workload name: {', '.join(sorted(workloads))}, or all"
                    problem((*base, "demand", name), f"unknown workload {name!r}", hint)
    return problems
