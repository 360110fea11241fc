"""Exact rack counts for sites whose packing the model only relaxes.

Sites with more maximal fills than `BuildOptions.pattern_limit` get an aggregate relaxation
of their packing in the model (`packing._relaxed_packing`): racks R and servers D_h per shape
satisfy the kW and U capacities summed over racks, the per-shape rack capacity, and "no
rack holds k+1 items each larger than 1/(k+1) of it". The relaxation can undercount racks.
After each solve the plan's D at every relaxed site is packed exactly (the fewest racks,
`binpack.rack_count`); where that needs more than R, the monotone cut

    (D_h >= d_h for every shape h with d_h > 0)  =>  R >= rack_count(d)

is added and the stage solved again (logic-based Benders: more servers never need fewer
racks, so the cut is valid for every plan). When no cut is violated the plan packs into
R racks everywhere, its cost is achievable, and since the model was a relaxation, it is
optimal. Why: per-rack variables for such sites make the model much larger, and the
relaxation alone is usually exact within one or two rounds.

A site cut `Tuning.exact_after_cuts` times is packed exactly (per-rack variables,
`packing.rack_bins`) in every later solve: monotone cuts can be dodged by swapping one
server shape for a similar one. Each cut also carries the cutting-stock LP's dual weights
for the shapes it saw (`dual_weights`), a linear row valid for every plan, which stops the
same site being undercut again by a similar mix. A hint's counts get their cuts before the
first solve (`hinted_cuts`). The measurements are in `benchmarks/README.md`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model
from ortools.sat.python import cp_model_helper as cmh

from gpusolve.optimize.binpack import estimates, few_fills, lower_bound, pack, rack_count
from gpusolve.optimize.packing import RelaxedSite
from gpusolve.optimize.patterns import Shape, TooManyPatterns, first_fit_fills, maximal_fills
from gpusolve.optimize.tuning import DEFAULT, Tuning

__all__ = ["estimates", "lower_bound", "pack", "rack_count"]  # re-exported for the checks


@dataclass(frozen=True)
class Cut:
    """`demand >= counts` (on the shapes with a positive count) implies `racks >= need`;
    and, when `weights` is set, `sum(weights[h] * demand[h]) <= scale * racks`."""

    site: str
    counts: tuple[int, ...]
    need: int
    weights: tuple[int, ...] = ()
    scale: int = 0
    # Set when the exact packing was too large to compute (`rack_count`'s limit): `need` is
    # then only the lower bound, `enough` racks surely hold the counts (first-fit), and
    # the site is packed per rack from the next solve on.
    exact: bool = False
    enough: int = 0

    @property
    def repair(self) -> int:
        """Racks that surely hold the counts."""
        return max(self.need, self.enough)


def packs(
    rel: RelaxedSite, counts: Sequence[int], racks: int, fill_limit: int = DEFAULT.fill_limit
) -> bool:
    """Whether `counts` servers per shape surely fit in `racks` racks of the site, cheaply
    enough to ask of every plan a search finds (False when not known to fit)."""
    lower, ffd = estimates(rel.shapes, counts, rel.rack_w, rel.rack_units)
    if lower > racks:
        return False
    if ffd <= racks:
        return True
    need = rack_count(rel.shapes, counts, rel.rack_w, rel.rack_units, fill_limit)
    return need is not None and need <= racks


def packing(
    rel: RelaxedSite, counts: Sequence[int], fill_limit: int = DEFAULT.fill_limit
) -> list[tuple[int, ...]]:
    """One rack's servers per shape, for each rack of a packing of `counts` at the site in
    the fewest racks known: the exact packing when first-fit misses the lower bound and
    the fills are few enough (`binpack.few_fills`), else first-fit's."""
    shapes, rack_w, units = rel.shapes, rel.rack_w, rel.rack_units
    lower, ffd = estimates(shapes, counts, rack_w, units)
    if ffd > lower and few_fills(shapes, counts, rack_w, units, fill_limit):
        return list(pack(shapes, tuple(counts), rack_w, units))
    present = {s: c for s, c in zip(shapes, counts, strict=True) if c > 0}
    racks = first_fit_fills(present, rack_w, units)
    return [tuple(rack.get(s, 0) for s in rel.shapes) for rack in racks]


def violated(
    sites: Sequence[RelaxedSite], solver: cp_model.CpSolver, tuning: Tuning = DEFAULT
) -> list[Cut]:
    """Cuts for every relaxed site whose servers need more racks than the plan rents."""
    cuts: list[Cut] = []
    for rel in sites:
        counts = tuple(int(solver.value(d)) for d in rel.demand)
        racks = int(solver.value(rel.racks))
        need = rack_count(rel.shapes, counts, rel.rack_w, rel.rack_units, tuning.fill_limit)
        if need is None:
            lower, enough = estimates(rel.shapes, counts, rel.rack_w, rel.rack_units)
            if enough > racks:  # not known to fit: pack the site exactly from now on
                cuts.append(Cut(rel.site, counts, lower, exact=True, enough=enough))
            continue
        if need > racks:
            cut = _cut(rel, counts, need, tuning)
            weighted = sum(w * c for w, c in zip(cut.weights, counts, strict=True))
            if weighted <= tuning.cut_scale * racks:
                # The LP bound rounds to what the plan has: the row adds nothing.
                cut = Cut(rel.site, counts, need)
            cuts.append(cut)
    return cuts


def hinted_cuts(
    sites: Sequence[RelaxedSite], hint: Mapping[int, int], tuning: Tuning = DEFAULT
) -> list[Cut]:
    """Cuts at the servers a hint places on each relaxed site, whether or not its racks
    hold them, for the first solve.

    The search's optimum usually sits close to the warm start's plan, at the same sites
    with similar counts. The cut's dual-weight row holds for every plan and tightens the
    LP there before the first solve rather than after it.
    """
    cuts: list[Cut] = []
    for rel in sites:
        counts = tuple(evaluate(d, hint) for d in rel.demand)
        if not any(counts):
            continue
        need = rack_count(rel.shapes, counts, rel.rack_w, rel.rack_units, tuning.fill_limit)
        if need is not None:
            cuts.append(_cut(rel, counts, need, tuning))
    return cuts


def _cut(rel: RelaxedSite, counts: tuple[int, ...], need: int, tuning: Tuning) -> Cut:
    scale = tuning.cut_scale
    weights = dual_weights(rel.shapes, counts, rel.rack_w, rel.rack_units, scale, tuning.fill_limit)
    return Cut(rel.site, counts, need, weights, scale if weights else 0)


def evaluate(expr: cp_model.LinearExpr, values: Mapping[int, int]) -> int:
    """An integral linear expression's value under `values` (by proto index; 0 when absent)."""
    flat = cmh.FlatIntExpr(expr)
    return int(flat.offset) + sum(
        coef * values.get(var.index, 0) for var, coef in zip(flat.vars, flat.coeffs, strict=True)
    )


def dual_weights(
    shapes: Sequence[Shape],
    counts: Sequence[int],
    rack_w: int,
    rack_units: int,
    scale: int = DEFAULT.cut_scale,
    fill_limit: int = DEFAULT.fill_limit,
) -> tuple[int, ...]:
    """Integer weights w, out of `scale`, with sum(w[h] * f[h]) <= scale for every fill
    f one rack can hold, as large as possible on `counts` (the cutting-stock LP's dual,
    rounded down to integers). Then `sum(w[h] * D[h]) <= scale * racks` holds for every
    plan at the site, whatever its counts: a linear cut the LP uses, which a monotone cut
    is not. Weights are computed on the shapes present; another shape gets the largest
    weight of a present shape it is at least as large as in both kW and U (putting that
    shape in its place still fits, so the rack's weighted sum is unchanged). Empty when
    the present shapes have too many fills to enumerate."""
    idx = [i for i, c in enumerate(counts) if c > 0]
    sub = [shapes[i] for i in idx]
    try:
        fills = maximal_fills(sub, rack_w, rack_units, fill_limit)
    except TooManyPatterns:
        return ()
    model = cp_model.CpModel()
    w = [model.new_int_var(0, scale, f"w{h}") for h in range(len(sub))]
    for fill in fills:
        model.add(sum(c * x for c, x in zip(fill, w, strict=True)) <= scale)
    model.maximize(sum(counts[i] * x for i, x in zip(idx, w, strict=True)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    # Ctrl-C is the command's (`interrupt.py`): CP-SAT catching it here would end only
    # this tiny solve and the signal would be lost.
    solver.parameters.catch_sigint_signal = False
    # CP-SAT's presolve would take nearly all of this tiny solve's time.
    solver.parameters.cp_model_presolve = False
    if solver.solve(model) != cp_model.OPTIMAL:  # pragma: no cover - tiny model
        return ()
    present = {shapes[i]: int(solver.value(x)) for i, x in zip(idx, w, strict=True)}
    return tuple(
        max((v for s, v in present.items() if _fits_within(s, g)), default=0) for g in shapes
    )


def _fits_within(small: Shape, large: Shape) -> bool:
    return small.power_w <= large.power_w and small.rack_units <= large.rack_units


def add_cut(model: cp_model.CpModel, rel: RelaxedSite, cut: Cut) -> None:
    """(D_h >= counts_h for every h with counts_h > 0)  =>  R >= need; and the weighted
    capacity row when the cut carries dual weights."""
    fires = model.new_bool_var(f"cut[{rel.site}]")
    escapes = [fires]
    for d, c in zip(rel.demand, cut.counts, strict=True):
        if c > 0:
            below = model.new_bool_var("")
            model.add(d <= c - 1).only_enforce_if(below)
            escapes.append(below)
    model.add_bool_or(escapes)
    model.add(rel.racks >= cut.need).only_enforce_if(fires)
    if cut.weights:
        weighted = sum(w * d for w, d in zip(cut.weights, rel.demand, strict=True) if w)
        model.add(weighted <= cut.scale * rel.racks)
