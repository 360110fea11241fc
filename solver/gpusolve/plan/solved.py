"""`Solved`: one finished plan and everything it was solved from.

`make_plan` returns it; the analyses (`analyses/`: top-k, why-not, payback, sensitivity)
take it and nothing else, so each analyses exactly the instance the plan solved (the same
candidates, the same objective) instead of building it again. A plan is of one of three
kinds: one instance (`Single`), hedged over scenarios (`Hedged`), or a purchase schedule
over periods (`Phased`, whose output is a `Schedule`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpusolve.models.plan import Plan
from gpusolve.models.schedule import Schedule
from gpusolve.optimize import ir

if TYPE_CHECKING:  # the candidates stage imports ortools: not when the command reads options
    from gpusolve.candidates.prepare import Prepared
    from gpusolve.optimize.phased.ir import Mode, PhasedInstance, PhasedSolution
    from gpusolve.optimize.twostage import solve as twostage
    from gpusolve.plan.inputs import Inputs
    from gpusolve.plan.phased.inputs import PhasedInputs

# What `plan` prints: one plan (single or hedged) or a purchase schedule.
Outcome = Plan | Schedule


@dataclass(frozen=True)
class PlanOptions:
    config: ir.SolveConfig = field(default_factory=ir.SolveConfig)
    top_k: int = 0
    why_not: str | None = None
    timings: bool = False
    robust: str = "expected"  # with a scenarios: block: "expected" or "worst" TCO


@dataclass(frozen=True)
class Single:
    """A plan of one instance: its candidates and CP-SAT's solution (None: the instance was
    proven to admit no plan, or some workload has no candidate at all)."""

    prepared: Prepared
    solution: ir.Solution | None

    @property
    def instance(self) -> ir.Instance:
        return self.prepared.cand.instance


@dataclass(frozen=True)
class ScenarioCandidates:
    """One scenario of a two-stage plan, ready to optimise."""

    name: str
    probability: float  # 0 for the nominal scenario when it is only compared against
    prepared: Prepared


@dataclass(frozen=True)
class Hedged:
    """A plan hedged over scenarios: one purchase, rentals per scenario."""

    scenarios: tuple[ScenarioCandidates, ...]  # the declared ones, harmonised, in order
    weighed: tuple[twostage.Scenario, ...]  # the same, as the two-stage model weighs them
    result: twostage.TwoStageResult
    robust: twostage.Robust
    where: ScenarioCandidates  # the scenario the plan shows
    shown: ir.Solution  # the hedged plan in that scenario


@dataclass(frozen=True)
class SinglePeriod:
    """The ordinary single plan at peak demand, and its fleet priced over the periods."""

    fleet: dict[tuple[str, str], int]  # (server, site) -> servers the single plan buys
    status: str  # the single plan's own status
    tco: float | None  # in the single plan's own model (fabric, storage, exact racks)
    priced: PhasedSolution  # its fleet in the phased model


@dataclass(frozen=True)
class Phased:
    """A purchase schedule over periods: its per-period inputs, the schedule and the two
    baselines solved by the same model (by mode: "free", "buy-now", "rent"), and the
    ordinary single plan priced over the periods (None until it is, or without a
    schedule)."""

    inputs: PhasedInputs
    solutions: dict[Mode, PhasedSolution]
    single: SinglePeriod | None = None

    @property
    def best(self) -> PhasedSolution:
        return self.solutions["free"]

    @property
    def instance(self) -> PhasedInstance:
        return self.inputs.instance


@dataclass(frozen=True)
class Solved:
    """The run, what it was solved as (None when no plan was found: infeasible for want
    of candidates of some size, out of time, or stopped), and the finished outcome: a
    Plan, or a Schedule for a `Phased` solution."""

    run: Inputs
    options: PlanOptions
    plan: Outcome
    solution: Single | Hedged | Phased | None = None

    def with_plan(self, plan: Outcome) -> Solved:
        return replace(self, plan=plan)

    @property
    def single_plan(self) -> Plan:
        """The Plan of a single or hedged plan (the analyses that read one call this after
        dispatching on the kind)."""
        assert isinstance(self.plan, Plan)
        return self.plan
