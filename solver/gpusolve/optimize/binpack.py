"""The fewest racks holding given servers per shape: exact facts about a site's packing.

The read-out packs a relaxed site's servers into racks with these (`readout.py`), and the
rack-count checks between solves (`search/lazy.py`) ask the same questions of every plan
a search finds. First-fit decreasing answers when it meets a lower bound (the common case:
one or two shapes per site); otherwise a cutting-stock model over the maximal fills does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from ortools.sat.python import cp_model

from gpusolve.optimize.patterns import (
    Fill,
    Shape,
    TooManyPatterns,
    first_fit_decreasing,
    max_count,
    maximal_fills,
)


def lower_bound(shapes: Sequence[Shape], counts: Sequence[int], rack_w: int, units: int) -> int:
    """Racks no packing of `counts` can beat: capacity by power, by space, and per shape."""
    power = sum(s.power_w * c for s, c in zip(shapes, counts, strict=True))
    space = sum(s.rack_units * c for s, c in zip(shapes, counts, strict=True))
    bounds = [math.ceil(power / rack_w) if rack_w else 0, math.ceil(space / units)]
    bounds += [
        math.ceil(c / max_count(s, rack_w, units))
        for s, c in zip(shapes, counts, strict=True)
        if c > 0
    ]
    return max(bounds, default=0)


def estimates(
    shapes: Sequence[Shape], counts: Sequence[int], rack_w: int, rack_units: int
) -> tuple[int, int]:
    """(racks no packing beats, racks first-fit decreasing uses): when they meet, that is
    the fewest racks (the common case: one or two shapes per site)."""
    present = {s: c for s, c in zip(shapes, counts, strict=True) if c > 0}
    lower = lower_bound(shapes, counts, rack_w, rack_units)
    return lower, first_fit_decreasing(present, rack_w, rack_units)


def rack_count(
    shapes: Sequence[Shape],
    counts: Sequence[int],
    rack_w: int,
    rack_units: int,
    fill_limit: int | None = None,
) -> int | None:
    """The fewest racks holding `counts` servers per shape: first-fit decreasing when it
    meets the lower bound, else the exact packing. None when that needs the exact packing
    and the shapes present have more than `fill_limit` fills: a plan can spread many shapes
    over one site (mid-search, or at the end of a timed-out search), and the unbounded
    packing can then exhaust memory (one experiment checking every plan found was killed
    for it)."""
    lower, ffd = estimates(shapes, counts, rack_w, rack_units)
    if ffd <= lower:
        return ffd
    if fill_limit is not None and not few_fills(shapes, counts, rack_w, rack_units, fill_limit):
        return None
    return len(pack(tuple(shapes), tuple(counts), rack_w, rack_units))


def few_fills(
    shapes: Sequence[Shape], counts: Sequence[int], rack_w: int, rack_units: int, limit: int
) -> bool:
    """Whether the shapes present have at most `limit` fills: the enumeration `pack` runs,
    with a limit."""
    sub = [(s, c) for s, c in zip(shapes, counts, strict=True) if c > 0]
    try:
        maximal_fills([s for s, _ in sub], rack_w, rack_units, limit, [c for _, c in sub])
    except TooManyPatterns:
        return False
    return True


@lru_cache(maxsize=4096)
def pack(
    shapes: tuple[Shape, ...], counts: tuple[int, ...], rack_w: int, rack_units: int
) -> tuple[Fill, ...]:
    """An optimal packing of `counts` servers per shape: one fill per rack, each within
    the rack's kW and U, covering the counts exactly (a fill never exceeds what is left).

    A cutting-stock model over the maximal fills of the shapes present, capped by the
    counts; plans put few shapes on one site, so it is small and solves in milliseconds.
    """
    idx = [i for i, c in enumerate(counts) if c > 0]
    if not idx:
        return ()
    sub = [shapes[i] for i in idx]
    caps = [counts[i] for i in idx]
    fills = maximal_fills(sub, rack_w, rack_units, None, caps)
    model = cp_model.CpModel()
    upper = first_fit_decreasing(dict(zip(sub, caps, strict=True)), rack_w, rack_units)
    racks = [model.new_int_var(0, upper, f"r{j}") for j in range(len(fills))]
    for h, need in enumerate(caps):
        model.add(sum(f[h] * r for f, r in zip(fills, racks, strict=True)) >= need)
    model.add(sum(racks) <= upper)
    model.minimize(sum(racks))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 1
    # Ctrl-C is the command's (`interrupt.py`): CP-SAT catching it here would end only
    # this tiny solve and the signal would be lost.
    solver.parameters.catch_sigint_signal = False
    if solver.solve(model) != cp_model.OPTIMAL:  # pragma: no cover - tiny model
        raise RuntimeError("exact rack packing did not prove optimal")
    left = list(caps)
    out: list[Fill] = []
    for fill, var in zip(fills, racks, strict=True):
        for _ in range(int(solver.value(var))):
            take = [min(f, rest) for f, rest in zip(fill, left, strict=True)]
            left = [rest - t for rest, t in zip(left, take, strict=True)]
            full = [0] * len(shapes)
            for i, t in zip(idx, take, strict=True):
                full[i] = t
            out.append(tuple(full))
    return tuple(out)
