"""`plan --sensitivity` on a purchase schedule: how far each price in the schedule may move
before the schedule changes, and the schedule beyond each end.

The parameters are the prices the schedule pays: each server model it buys (its price in
every period, each cohort's residual value moving with it), each colocation offer it uses
(rack rent, power price), each cloud offer it rents (its price in every period). Each is
searched as a single plan's is (`probing.py`: geometric steps, then bisection), every
probe a re-solve of the whole schedule with that one price scaled in every period, over
the process pool (`pool.py`). "The same schedule" is the same purchases in the same
periods and, in every period, the same deployments. Card efficiency is not searched for a
schedule: it would build every period's candidates again at every probe.

The whole analysis gets the run's limits once more (its work limit, and its wall clock
when one is given), shared evenly by the probes it expects (`PROBES_PER_PARAMETER`), each
probe at least `MIN_PROBE_WORK`; a probe that stops at its share reports the best schedule
it found. A wall clock too short for a probe to find the schedule again is said, not
searched.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpusolve.analyses.pool import OnDone, Stop, run_tasks
from gpusolve.analyses.probing import (
    NO_PLAN,
    NOT_FOUND,
    Outcome,
    Parameter,
    PlanKey,
    Probe,
    both_ends,
    past_deadline,
    to_range,
)
from gpusolve.candidates.scaling import scale_instance
from gpusolve.models.plan import Sensitivity, SensitivityKind
from gpusolve.optimize.ir import Instance, SolveConfig
from gpusolve.optimize.phased.ir import PhasedInstance, PhasedSolution

# A schedule probe is many single plans solved at once: the switch point to within 5 %,
# not the single plan's 1 %.
REL_TOL = 0.05
# Solves one parameter's search takes: steps out to each end and a bisection at each.
PROBES_PER_PARAMETER = 16
# Below these a probe cannot even find the schedule again (building the model of the
# shipped example takes about a third of a second, re-proving it one to three units of
# work).
MIN_PROBE_S = 1.0
MIN_PROBE_WORK = 1.0


def schedule_key(s: PhasedSolution) -> PlanKey:
    """What a schedule buys when, and what runs each workload in each period."""
    if not s.periods:
        return NO_PLAN if s.status == "infeasible" else NOT_FOUND
    bought = tuple(
        (pp.period.index, k, site, n)
        for pp in s.periods
        for (k, site), n in sorted(pp.bought.items())
    )
    runs = tuple(
        (pp.period.index, c.workload, c.sku or c.offer or "", c.site or "", c.servers)
        for pp in s.periods
        for c in (*pp.choices, *pp.bursts)
    )
    return (bought, runs)


def describe(key: PlanKey, base: PlanKey) -> str:
    """The schedule `key` in words: what it buys and runs differently from `base`."""
    if key == NO_PLAN:
        return "no feasible schedule"
    if key == NOT_FOUND:
        return "no schedule found within the work limit (none proven impossible)"
    bought = [b for b in key[0] if b not in base[0]]
    runs = [r for r in key[1] if r not in base[1]]
    parts = [f"buys {n} x {k} @ {site} in P{p}" for p, k, site, n in bought]
    seen: set[tuple[str, str]] = set()
    for p, workload, what, _site, count in runs:
        if (workload, what) not in seen:
            seen.add((workload, what))
            parts.append(f"{workload} on {count} x {what} from P{p}")
    return "; ".join(parts[:4]) or "the same deployments, bought at other times"


def parameters(pi: PhasedInstance, s: PhasedSolution, currency: str) -> list[Parameter]:
    """The prices the schedule pays: a server's and a rack's at their first period's value,
    the power and rental prices as multiples of the catalogue's."""
    out: list[Parameter] = []
    skus = sorted({k for pp in s.periods for k, _site in pp.bought})
    sites = sorted({c.site for pp in s.periods for c in pp.choices if c.site})
    offers = sorted({c.offer for pp in s.periods for c in (*pp.choices, *pp.bursts) if c.offer})
    for k in skus:
        first = next((x for x in pi.price.get(k, ()) if x is not None), 0)
        words = f"price of {k} (first period it is sold; later prices move with it)"
        out.append(Parameter("server_price", k, words, f"{currency}/server", float(first)))
    rents = {
        s: site.rack_rent_month for inst in reversed(pi.instances) for s, site in inst.sites.items()
    }
    for site in sites:
        rent = float(rents.get(site, 0))
        out.append(
            Parameter("rack_rent", site, f"rack rent at {site}", f"{currency}/rack-month", rent)
        )
        out.append(Parameter("power_price", site, f"power price at {site}", "x catalogue", 1.0))
    for offer in offers:
        out.append(Parameter("cloud_price", offer, f"price of {offer}", "x catalogue", 1.0))
    return out


def scaled(pi: PhasedInstance, kind: SensitivityKind, subject: str, f: float) -> PhasedInstance:
    """The schedule's instance with one price at `f` x its value in every period."""
    if kind == "server_price":
        price = {
            k: tuple(None if x is None else round(x * f) for x in xs) if k == subject else xs
            for k, xs in pi.price.items()
        }
        residual = {
            k: tuple(round(x * f) for x in xs) if k == subject else xs
            for k, xs in pi.residual.items()
        }
        return dataclasses.replace(pi, price=price, residual=residual)
    instances = tuple(_scaled_period(inst, kind, subject, f) for inst in pi.instances)
    return dataclasses.replace(pi, instances=instances)


def _scaled_period(inst: Instance, kind: SensitivityKind, subject: str, f: float) -> Instance:
    if kind == "cloud_price":
        return scale_instance(inst, kind, subject, f)
    site = inst.sites.get(subject)
    if site is None:
        return inst
    if kind == "rack_rent":
        moved = dataclasses.replace(site, rack_rent_month=round(site.rack_rent_month * f))
        return dataclasses.replace(inst, sites={**inst.sites, subject: moved})
    energy = {k: round(v * f) for k, v in site.energy_month.items()}
    sites = {**inst.sites, subject: dataclasses.replace(site, energy_month=energy)}
    owned = tuple(
        dataclasses.replace(
            o,
            placements=tuple(
                dataclasses.replace(p, busy_energy=round(p.busy_energy * f))
                if p.site == subject
                else p
                for p in o.placements
            ),
        )
        for o in inst.owned
    )
    return dataclasses.replace(inst, sites=sites, owned=owned)


@dataclass(frozen=True)
class ScheduleTask:
    """One price's whole analysis: picklable, for the pool."""

    parameter: Parameter
    instance: PhasedInstance
    base: PhasedSolution  # the schedule: every probe starts from it
    base_key: PlanKey
    config: SolveConfig

    def analyse(self, inputs: Any) -> Outcome:
        return both_ends(self.parameter, self.solve_at, self.base_key, rel_tol=REL_TOL)

    def solve_at(self, factor: float) -> Probe:
        """The schedule at `factor`: another one only when it costs strictly less there
        than this schedule priced at `factor` (a search stopped at its limit, or a tie,
        does not move the edge)."""
        from gpusolve.optimize.phased.solve import held_to, solve_phased

        late = past_deadline(factor, self.base_key)
        if late is not None:
            return late
        p = self.parameter
        moved = scaled(self.instance, p.kind, p.subject, factor)
        kept = solve_phased(moved, self.config, restrict=held_to(self.base))
        found = solve_phased(moved, self.config, hint=self.base)
        same = kept.objective_value is not None and (
            found.objective_value is None or found.objective_value >= kept.objective_value
        )
        if same:
            return Probe(factor, self.base_key, describe(self.base_key, self.base_key), kept.tco)
        key = schedule_key(found)
        return Probe(factor, key, describe(key, self.base_key), found.tco)


def analyse(
    pi: PhasedInstance,
    best: PhasedSolution,
    currency: str,
    config: SolveConfig,
    workers: int,
    on_done: OnDone = lambda _: None,
    on_start: Callable[[int], None] = lambda _: None,
    stop: Stop | None = None,
) -> Sensitivity:
    started = time.perf_counter()
    params = parameters(pi, best, currency)
    probes = max(1, PROBES_PER_PARAMETER * len(params))
    # The pool runs `workers` probes at once: each gets that many shares of the wall clock.
    wall = config.time_limit_s * max(1, workers) / probes
    if wall < MIN_PROBE_S:
        why = (
            f"{len(params)} prices x about {PROBES_PER_PARAMETER} re-solves of the schedule "
            f"leave {wall:.2g} s each within --time-limit; give a longer one, or none"
        )
        return Sensitivity(not_searched=why)
    work = None
    if config.work_limit is not None:
        work = max(MIN_PROBE_WORK, config.work_limit / probes)
    probe = dataclasses.replace(config, workers=1, work_limit=work, time_limit_s=wall)
    base_key = schedule_key(best)
    tasks = [ScheduleTask(p, pi, best, base_key, probe) for p in params]
    on_start(len(tasks))
    outcomes = run_tasks(tasks, workers, None, on_done, stop)
    return Sensitivity(
        ranges=[to_range(o) for o in outcomes],
        solves=sum(o.solves for o in outcomes),
        wall_s=round(time.perf_counter() - started, 3),
    )
