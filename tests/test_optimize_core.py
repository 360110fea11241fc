"""The core search's arithmetic (`optimize/search/core.py`): which choices a core opens, how it
grows, and the bound it proves for every plan. The search itself is checked against brute
force in `test_optimize_differential.py`."""

from __future__ import annotations

import math

import pytest
from tests.support.differential import SEEDS, case, checked_on, leading_lp, normalised

from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.search import core, opening

# (rank, proto index), cheapest first, as `core.ranked` gives them.
ORDER = [(0.0, 10), (0.0, 11), (2.0, 12), (5.0, 13), (5.0, 14), (9.0, 15)]


def test_a_core_opens_every_choice_up_to_the_threshold_and_the_kept_ones() -> None:
    c = core.core(ORDER, 0.0, keep={15})
    assert c.closed == {12, 13, 14}
    assert c.least_out == 2.0
    whole = core.core(ORDER, 9.0, keep=set())
    assert whole.closed == frozenset() and whole.least_out is None


def test_ties_at_the_threshold_open_together() -> None:
    assert core.core(ORDER, 5.0, keep=set()).closed == {15}


def test_the_bound_is_the_weaker_of_inside_and_outside() -> None:
    c = core.core(ORDER, 0.0, keep=set())  # least left out: 2.0
    assert c.bound(100.0, 150.0) == 102  # a plan outside costs at least 100 + 2
    assert c.bound(100.0, 101.2) == 102  # rounded up: objectives are integral
    assert c.bound(100.0, 90.0) == 100  # the LP bound holds inside too
    assert c.bound(100.0, None) == 102  # no plan inside: only the outside counts
    whole = core.core(ORDER, 9.0, keep=set())
    assert whole.bound(100.0, 150.0) == 150
    assert whole.bound(100.0, None) == math.inf  # the whole model has no plan


def test_a_core_optimum_is_proven_only_below_every_plan_outside() -> None:
    c = core.core(ORDER, 0.0, keep=set())
    assert c.proves(101, 100.0)
    assert not c.proves(102, 100.0)  # a plan outside might tie it
    assert core.core(ORDER, 9.0, keep=set()).proves(10**9, 100.0)


def test_cores_grow_by_the_factor_up_to_the_exact_core() -> None:
    growth = 2.0
    first = core.core(ORDER, 0.0, keep=set())  # 2 open
    assert core.next_threshold(ORDER, first, exact=None, growth=growth) == 5.0  # the 4th's cost
    assert core.next_threshold(ORDER, first, exact=3.0, growth=growth) == 3.0  # no gain beyond
    assert core.next_threshold(ORDER, first, exact=1.0, growth=growth) is None  # proven
    last = core.core(ORDER, 9.0, set())
    assert core.next_threshold(ORDER, last, exact=None, growth=growth) is None


def test_a_core_always_grows_even_when_the_kept_choices_fill_the_count() -> None:
    # 5 open (3 of them kept), only 12 closed: the count alone would point back into
    # the open choices; the cheapest closed one opens regardless.
    crowded = core.core(ORDER, 0.0, keep={13, 14, 15})
    assert core.next_threshold(ORDER, crowded, exact=None, growth=0.5) == 2.0
    assert core.core(ORDER, 2.0, keep={13, 14, 15}).least_out is None


def _ranked_against_plans(
    seed: int, options: BuildOptions, with_opening: bool = False
) -> tuple[int, int] | None:
    """Check `core.ranked` on one enumerated instance: every feasible plan costs at least
    L + the rank of each choice it takes. Returns (choices ranked above their own reduced
    cost, plans checked), None when the LP has no optimum (no plan, mostly).
    `with_opening`: ranks also count the sites' opening bounds (`opening.py`)."""
    built, head, translated, lp = leading_lp(seed, options)
    if lp is None:
        return None
    rise = opening.bounds(translated, built, lp, 10.0).choices if with_opening else None
    rank = {index: cost for cost, index in core.ranked(built, lp, rise)}
    index_of = {(o.option.key, o.placement.site): o.var.index for o in built.owned}
    index_of.update({(c.option.key, None): c.var.index for c in built.cloud})
    plans = 0
    instance, evaluated = case(seed)
    for plan in evaluated:
        if plan.violated:
            continue
        value = normalised(head, plan.primary(instance.objective))
        for key in plan.keys:
            if key in index_of:  # not pruned from the model
                assert value >= lp.bound + rank[index_of[key]] - 1e-6, (seed, key)
        plans += 1
    raised = sum(1 for index, cost in rank.items() if cost > lp.reduced_costs[index] + 1e-9)
    return raised, plans


@pytest.mark.parametrize("pattern_limit", [2000, 0])
def test_a_choice_s_rank_never_exceeds_what_taking_it_adds_to_any_plan(
    pattern_limit: int,
) -> None:
    """The rank adds the reduced costs of what the choice forces (the site's used flag,
    its servers, a relaxed site's racks) to its own: still a bound on every plan taking
    it, and higher than the reduced cost alone on enough instances to matter. Pattern
    limit 0 relaxes every site's packing, as at 40x120x40, so racks count too."""
    raised_on = checked_on(_ranked_against_plans, BuildOptions(pattern_limit=pattern_limit))
    assert len(raised_on) >= 20, raised_on


def test_opening_bounds_lift_ranks_and_keep_them_bounds() -> None:
    """With the sites' opening bounds, ranks stay below what every plan pays and rise above
    the ranks without them on enough instances to matter (pattern limit 0, as at
    40x120x40)."""
    options = BuildOptions(pattern_limit=0)
    lifted_on = []
    for seed in SEEDS:
        plain = _ranked_against_plans(seed, options)
        lifted = _ranked_against_plans(seed, options, with_opening=True)
        if plain is not None and lifted is not None and lifted[0] > plain[0]:
            lifted_on.append(seed)
    assert len(lifted_on) >= 20, lifted_on
