"""What the candidates stage returns: the instance, each option's facts for the output
(`OptionMeta`), and why a candidate was rejected."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusolve.estimate import ConfigEstimate
from gpusolve.models.plan import MarginMiss, UnmetPreference
from gpusolve.models.policy import Charge
from gpusolve.optimize import finance, ir

MULTI_NODE_FABRICS = frozenset({"infiniband", "roce"})


@dataclass(frozen=True)
class OptionMeta:
    """Everything needed to render or explain one option (the IR carries only numbers)."""

    key: str
    workload: str
    mode: str  # "owned" | "cloud"
    card: str
    server: str | None
    cloud_offer: str | None
    nodes: int
    estimate: ConfigEstimate
    rental_hours: float = 0.0
    # Soft-rule penalties by rule: the option's own, and per site those of its placement
    # there; they sum to the IR's `penalty` (+ `Placement.penalty`).
    charges: tuple[Charge, ...] = ()
    site_charges: dict[str, tuple[Charge, ...]] = field(default_factory=dict)
    # Owned: hours the workload runs over the horizon, and the power each server draws then
    # and when idle (`finance.py`).
    busy_hours: float = 0.0
    busy_kw: float = 0.0
    idle_kw: float = 0.0
    # Cloud: the price tier the rental is charged at, per instance.
    rental_tier: finance.Tier | None = None
    lead_time_weeks: float = 0.0  # owned: weeks from order to a working server
    # Of the workload's demand this option is sized for: less than 1 for a mixed option's
    # base and its burst (`burst.py`).
    share: float = 1.0


@dataclass
class Rejection:
    workload: str
    candidate: str  # server, cloud offer or colo offer id
    reasons: list[str]


@dataclass
class Candidates:
    instance: ir.Instance
    meta: dict[str, OptionMeta]
    rejections: dict[str, list[Rejection]]
    explain: bool
    # The residual value's share and the plan-level finance parameters (`finance.py`).
    residual_share: float = 0.0
    finance_terms: finance.Terms = field(default_factory=finance.Terms)
    # Price multipliers for VAT on goods and on services (1.0 without VAT).
    vat_goods: float = 1.0
    vat_services: float = 1.0
    # Preferences no allowed option of a workload meets: charged nowhere (`preferences.py`).
    unmet: list[UnmetPreference] = field(default_factory=list)
    # Candidates the margin alone keeps out (`margin.py`): the plan says so.
    margin_misses: list[MarginMiss] = field(default_factory=list)

    def workloads_without_options(self) -> list[str]:
        have = {o.workload for o in self.instance.owned} | {o.workload for o in self.instance.cloud}
        return [w for w in self.instance.workloads if w not in have]

    def scope(self) -> dict[str, int]:
        """Over what a proof of optimality holds: the options built, and the workloads
        they serve (the SolverInfo fields of the same names)."""
        inst = self.instance
        served = {o.workload for o in inst.owned} | {o.workload for o in inst.cloud}
        return {
            "candidate_layouts": len(inst.owned) + len(inst.cloud),
            "candidate_workloads": len(served),
        }
