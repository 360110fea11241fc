"""The scenarios of a requirements file against the catalogue: every card id and workload
name a `scenarios:` block names must exist, and every multiplier must be one a future can
bring (each located at its own line)."""

from __future__ import annotations

from gpusolve.errors import Problem
from gpusolve.load.yamlio import Document
from gpusolve.models.catalog import Catalog
from gpusolve.models.requirements import SCENARIO_ALL, Requirements, Scenario

# Efficiency multiplies the compute and memory bandwidth the model says a card achieves. The
# model already puts the best-modelled families at about 64% of peak compute (Hopper GEMMs:
# 0.80 x 0.8, `analyses/probing.py`), so twice that is beyond any card's peak; below a
# tenth a card does almost no work (to take a card out, list it under `unavailable:`).
# The requirements model bounds every multiplier at 100x only, which alone let 100x pass.
EFFICIENCY_RANGE = (0.1, 2.0)
# A price or demand below a hundredth of today's is no scenario but a slip (1e-300 passed):
# the mirror of the hundredfold ceiling the requirements model sets.
MIN_FACTOR = 0.01


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
        for where, what in factor_problems(s):
            problem((*base, *where), what, "a scenario moves a figure by a plausible factor")
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


def factor_problems(s: Scenario) -> list[tuple[tuple[str, ...], str]]:
    """(where in the scenario, what is wrong) for each multiplier out of its range."""
    low, high = EFFICIENCY_RANGE
    found: list[tuple[tuple[str, ...], str]] = [
        (("efficiency", card), f"efficiency {f:g} is outside {low:g}-{high:g}: {_WHY}")
        for card, f in s.efficiency.items()
        if not low <= f <= high
    ]
    demand = s.demand if isinstance(s.demand, dict) else {"": s.demand}
    factors: list[tuple[tuple[str, ...], float]] = [
        (("demand", name) if name else ("demand",), f) for name, f in demand.items()
    ]
    factors += [(("prices", k), getattr(s.prices, k)) for k in ("servers", "cloud", "power")]
    found += [
        (where, f"{'.'.join(where)} {f:g} is below {MIN_FACTOR:g}: a hundredth of today's at least")
        for where, f in factors
        if f < MIN_FACTOR
    ]
    return found


_WHY = "twice the model is beyond a card's peak, a tenth is almost no work"
