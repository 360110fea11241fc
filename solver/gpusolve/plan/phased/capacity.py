"""Capacity against demand per workload and period of a purchase schedule (the report's
timeline chart and its table).

Capacity is the tokens/s of the option that runs the workload in the period (its
estimate, as the candidates stage priced it). Demand is what the period asks in the same
unit: an inference workload's target tokens/s for the period; a training workload's tokens
for the period (its runs times tokens per run) over the hours its slot runs in the period's
months, an average rate (a run with a deadline needs its own rate within it, which the
option already meets).
"""

from __future__ import annotations

from gpusolve.models.money import slot_hours_per_month
from gpusolve.models.requirements import InferenceWorkload, Requirements, TrainingBase
from gpusolve.models.schedule import WorkloadCapacity
from gpusolve.optimize.phased.ir import PeriodPlan, PhasedInstance, PhasedSolution
from gpusolve.plan.phased.inputs import period_requirements


def demand_tokens_per_s(reqs: Requirements, name: str, months: int) -> float | None:
    """A workload's demand in a period's requirements, tokens/s (None: not stated so)."""
    w = next(w for w in reqs.workloads if w.name == name)
    if isinstance(w, InferenceWorkload):
        return w.target_tokens_per_s
    if isinstance(w, TrainingBase):
        seconds = months * slot_hours_per_month(w.schedule) * 3600
        return w.runs * w.tokens_per_run / seconds if seconds else None
    return None


def _capacity(pi: PhasedInstance, pp: PeriodPlan, reqs: Requirements) -> list[WorkloadCapacity]:
    inst = pi.instances[pp.period.index]
    throughput = {o.key: o.throughput for o in inst.owned}
    throughput.update({c.key: c.throughput for c in inst.cloud})
    return [
        WorkloadCapacity(
            workload=c.workload,
            capacity_tokens_per_s=throughput.get(c.option, 0),
            demand_tokens_per_s=demand_tokens_per_s(reqs, c.workload, pp.period.months),
        )
        for c in pp.choices
    ]


def period_capacity(
    pi: PhasedInstance, best: PhasedSolution, reqs: Requirements
) -> list[list[WorkloadCapacity]]:
    """Per period of the schedule, each running workload's capacity and demand."""
    return [_capacity(pi, pp, period_requirements(reqs, pp.period)) for pp in best.periods]
