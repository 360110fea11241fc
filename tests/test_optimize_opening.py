"""Sites' and choices' bounds from the site's own LP (`optimize/search/opening.py`) against brute
force: every plan that uses a site or takes a choice costs at least the LP bound plus its
bound."""

from __future__ import annotations

import pytest
from tests.support.differential import SEEDS, case, checked_on, leading_lp, normalised

from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.search import core, opening


def _opening_against_plans(seed: int, options: BuildOptions) -> tuple[int, int] | None:
    """Check one enumerated instance. Returns (choices whose bound is above their rank
    without it, plans taking such a choice), None when the LP has no optimum."""
    built, head, translated, lp = leading_lp(seed, options)
    if lp is None:
        return None
    opened = opening.bounds(translated, built, lp, 10.0)
    rise = opened.choices
    # A site whose LP has no solution is one no plan can use (seed 43), so it has no bound.
    assert set(opened.sites) <= set(built.used)
    plain = {index: rank for rank, index in core.ranked(built, lp)}
    above = {index for index, value in rise.items() if value > plain[index] + 1e-6}
    index_of = {(o.option.key, o.placement.site): o.var.index for o in built.owned}
    instance, evaluated = case(seed)
    plans = 0
    for plan in evaluated:
        if plan.violated:
            continue
        value = normalised(head, plan.primary(instance.objective))
        taken = [index_of[key] for key in plan.keys if key in index_of]
        for index in taken:
            assert value >= lp.bound + rise.get(index, 0.0) - 1e-6, (seed, index)
        for site in {site for _, site in plan.keys if site is not None}:
            assert value >= lp.bound + opened.sites[site] - 1e-6, (seed, site)
        plans += any(index in above for index in taken)
    return len(above), plans


@pytest.mark.parametrize("pattern_limit", [2000, 0])
def test_every_plan_taking_a_choice_pays_its_bound(pattern_limit: int) -> None:
    """And the bounds say more than the ranks from the whole LP's duals alone on enough
    instances to matter. Pattern limit 0 relaxes every site's packing (one integer rack
    count per site), as at 40x120x40."""
    tested_on = checked_on(_opening_against_plans, BuildOptions(pattern_limit=pattern_limit))
    assert len(tested_on) >= 30, tested_on


def test_no_time_leaves_every_bound_at_zero() -> None:
    built, _, translated, lp = leading_lp(SEEDS[0])
    assert lp is not None
    assert opening.bounds(translated, built, lp, 0.0) == opening.Opening()
