"""The seeded instances the optimiser tests share: each with every plan the brute-force
reference enumerates (cached per seed, so a file asking again does not enumerate again),
and the LP of its leading criterion."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from tests.support.optimize_reference import Evaluated, evaluate_all, random_instance

from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.ir import Instance
from gpusolve.optimize.model import Built, build
from gpusolve.optimize.search import relaxation
from gpusolve.optimize.solve import Criterion, criteria

SEEDS = range(300)


@cache
def case(seed: int) -> tuple[Instance, list[Evaluated]]:
    instance = random_instance(seed)
    return instance, evaluate_all(instance)


def leading_lp(
    seed: int, options: BuildOptions | None = None
) -> tuple[Built, Criterion, relaxation.Relaxation, relaxation.LpSolution | None]:
    """An enumerated instance's model, its leading criterion, and the LP minimising that
    criterion normalised (None when the LP has no optimum)."""
    built = build(case(seed)[0], options)
    head = criteria(built)[0]
    translated = relaxation.translate(built.model, head.normalised())
    return built, head, translated, translated.solve(10.0)


def normalised(head: Criterion, value: int) -> int:
    """A plan's value of the criterion as `Criterion.normalised` counts it."""
    return head.hi - value if head.maximise else value - head.lo


def checked_on(
    check: Callable[[int, BuildOptions], tuple[int, int] | None], options: BuildOptions
) -> list[int]:
    """The enumerated seeds on which `check` (returning (choices lifted, plans checked),
    None without an LP optimum) lifted some choice and checked some plan."""
    out = []
    for seed in SEEDS:
        result = check(seed, options)
        if result is not None and result[0] and result[1]:
            out.append(seed)
    return out
