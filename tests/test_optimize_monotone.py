"""Property tests (hypothesis): the optimiser's optimum moves the right way.

On the differential tests' random small instances (`optimize_reference.random_instance`):
loosening deadlines (the options tagged as missing one become allowed) or raising a budget
never raises the optimum; adding a requirement (some options now break it) never lowers it.
These hold for an exact optimiser over a fixed candidate space whatever the dominance
pruning drops, so they catch a pruning rule that is not exact. `test_candidates_space.py`
checks the same from requirements through the candidates.
"""

from __future__ import annotations

import dataclasses

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tests.factories.instances import ONE
from tests.support.optimize_reference import evaluate_all, optimum, random_instance

from gpusolve.optimize.ir import Instance, Requirement
from gpusolve.optimize.solve import solve

SOME = settings(max_examples=25, deadline=None, derandomize=True)
SEEDS = st.integers(0, 100_000)


def best(instance: Instance) -> int | None:
    """The proven optimum (the objective, lexicographic first stage), or None."""
    solution = solve(instance, ONE)
    if solution.status == "infeasible":
        return None
    assert solution.status == "optimal", solution.status
    assert solution.objective_value is not None
    # The brute-force enumerator agrees (the differential tests check more of it).
    ref = optimum(instance, evaluate_all(instance))
    assert ref is not None and ref[0] == solution.objective_value
    return solution.objective_value


def _better(instance: Instance, a: int | None, b: int | None) -> bool:
    """`a` is at least as good as `b` (None: no plan)."""
    if b is None:
        return True
    if a is None:
        return False
    return a >= b if instance.objective == "max-throughput" else a <= b


def _without_deadlines(instance: Instance) -> Instance:
    def free(names: frozenset[str]) -> frozenset[str]:
        return frozenset(n for n in names if not n.startswith("deadline:"))

    owned = tuple(dataclasses.replace(o, violates=free(o.violates)) for o in instance.owned)
    cloud = tuple(dataclasses.replace(c, violates=free(c.violates)) for c in instance.cloud)
    return dataclasses.replace(instance, owned=owned, cloud=cloud)


@SOME
@given(SEEDS)
def test_loosening_deadlines_never_worsens_the_optimum(seed: int) -> None:
    instance = random_instance(seed)
    assume(any(n.startswith("deadline:") for n in instance.requirements))
    loose = _without_deadlines(instance)
    assert _better(instance, best(loose), best(instance))


@SOME
@given(SEEDS, st.sampled_from([1.2, 2.0, 10.0]))
def test_raising_a_budget_never_worsens_the_optimum(seed: int, factor: float) -> None:
    instance = random_instance(seed)
    assume(instance.capex_max is not None or instance.monthly_max is not None)
    raised = dataclasses.replace(
        instance,
        capex_max=None if instance.capex_max is None else round(instance.capex_max * factor),
        monthly_max=None if instance.monthly_max is None else round(instance.monthly_max * factor),
    )
    assert _better(instance, best(raised), best(instance))


@SOME
@given(SEEDS, st.integers(0, 2**16))
def test_an_added_requirement_never_improves_the_optimum(seed: int, mask: int) -> None:
    """A new requirement that some options (chosen by `mask`) break, enforced."""
    instance = random_instance(seed)
    name = "extra"
    tagged = [o for i, o in enumerate(instance.owned) if mask >> (i % 16) & 1]
    owned = tuple(
        dataclasses.replace(o, violates=o.violates | {name}) if o in tagged else o
        for o in instance.owned
    )
    stricter = dataclasses.replace(
        instance,
        owned=owned,
        requirements={**instance.requirements, name: Requirement(name, "an added requirement")},
    )
    assert _better(instance, best(instance), best(stricter))
