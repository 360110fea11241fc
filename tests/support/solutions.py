"""Readers of an optimiser solution that the optimiser tests share."""

from __future__ import annotations

from gpusolve.optimize.ir import Solution


def plan(solution: Solution) -> dict[str, tuple[str, str | None]]:
    return {c.workload: (c.option, c.site) for c in solution.choices}
