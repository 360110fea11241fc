"""A CP-SAT model solved as a MILP by HiGHS, its answer checked by CP-SAT itself.

The model is translated from its proto (`translate.py`), its solution hints handed to HiGHS
as a (partial) start, and HiGHS's values are then fixed in the very CP-SAT model and
solved: CP-SAT confirms that they satisfy every constraint as CP-SAT reads it (no tolerance)
and evaluates every variable and expression the readout asks for, so the caller reads the
answer through a `CpSolver` as it would after a CP-SAT search. `None` means "not answered
here": the model is not a MILP, HiGHS could not tell infeasible from unbounded, or its
values fail CP-SAT's check; the caller then searches with CP-SAT.
"""

from __future__ import annotations

from dataclasses import dataclass

from ortools.sat.python import cp_model

from gpusolve.optimize.ir import SolveConfig, Status
from gpusolve.optimize.milp.highs import Found, solve_milp
from gpusolve.optimize.milp.translate import Milp, NotMilp, translate

# HiGHS's threads when it solves alone: a fixed count, not the machine's, so that the same
# model stops at the same check on any machine (its parallel MIP search is deterministic for
# a given thread count: the same incumbent and check count on repeated runs under different
# loads, benchmarks/README.md); two, as the 2-core CI machine has, and as the peer HiGHS
# the benchmarks compare with runs.
ALONE_THREADS = 2


@dataclass(frozen=True)
class MilpOutcome:
    status: Status
    # A CP-SAT solver whose `value()` reads the solution (None: no solution found).
    values: cp_model.CpSolver | None
    bound: int | None
    work: float


def hints(model: cp_model.CpModel) -> dict[int, int]:
    """The model's solution hints by variable index (CP-SAT's start, HiGHS's too).

    Reading `proto.solution_hint` creates the field: an empty hint that CP-SAT then
    searches from (on the shipped schedule example's buy-now baseline, 6.3 units of work to
    the proof instead of 1.0), so a model without hints is left without them."""
    if not model.proto.has_solution_hint():
        return {}
    hint = model.proto.solution_hint
    return dict(zip(hint.vars, hint.values, strict=True))


def checked(model: cp_model.CpModel, values: tuple[int, ...]) -> cp_model.CpSolver | None:
    """A solver holding `values` as the model's solution; None if CP-SAT rejects them."""
    model.clear_hints()  # type: ignore[no-untyped-call]
    hint = model.proto.solution_hint
    hint.vars.extend(range(len(values)))
    hint.values.extend(values)
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.fix_variables_to_their_hinted_value = True
    params.num_workers = 1
    params.catch_sigint_signal = False
    status = solver.solve(model)
    return solver if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None


def solve_with_highs(
    model: cp_model.CpModel,
    config: SolveConfig,
    found: Found | None = None,
    milp: Milp | None = None,
) -> MilpOutcome | None:
    """HiGHS's answer to `model` (minimising its objective) within `config`'s limits, or
    None where CP-SAT must answer (see the module's docstring); `milp`, the model's
    translation where the caller has it."""
    if milp is None:
        try:
            milp = translate(model.proto)
        except NotMilp:
            return None
    hinted = hints(model)
    answer = solve_milp(milp, config, found, hinted, threads=ALONE_THREADS)
    if answer.status == "model_invalid":
        return None
    if answer.values is None:
        return MilpOutcome(answer.status, None, answer.bound, answer.work)
    values = checked(model, answer.values)
    if values is None:
        return None
    return MilpOutcome(answer.status, values, answer.bound, answer.work)
