"""The schedule's data: the instance over periods and what a solve returns.

Apart from the model and its solve so that the analyses and the benchmarks read these
types without the model's code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpusolve.models.periods import Period
from gpusolve.optimize.ir import FabricCount, Instance, Status

Mode = Literal["free", "buy-now", "rent"]


@dataclass(frozen=True)
class PhasedInstance:
    periods: tuple[Period, ...]
    instances: tuple[Instance, ...]  # one per period: the workloads running in it
    # sku -> price per server bought at the start of each period; None: cannot be bought then
    price: dict[str, tuple[int | None, ...]]
    # sku -> first period a server bought in each period works in (None: after the horizon)
    works_from: dict[str, tuple[int | None, ...]]
    horizon_months: int
    # sku -> value at the horizon per server bought in each period (0 when not credited)
    residual: dict[str, tuple[int, ...]] = field(default_factory=dict)
    min_term_months: dict[str, int] = field(default_factory=dict)  # site -> shortest contract
    capex_max: int | None = None  # enforced by requirement "capex"
    capex_by_year: tuple[int, ...] = ()  # per fiscal year: requirement "capex_year:<y>"
    # Spend other than purchases over the horizon <= horizon x this (requirement "monthly").
    monthly_max: int | None = None
    # Capex + that spend over the horizon (requirement "total"); the residual is not cash.
    total_max: int | None = None
    # Explain mode (`phased_explain.py`): sku -> first period it may be bought in; `price`
    # then holds what it would cost before that too, and buying earlier needs the
    # requirement `available:<sku>` relaxed.
    available_period: dict[str, int] = field(default_factory=dict)
    # Per period, option key -> the card it runs on (`switching.py`: a platform is a card at
    # a site or cloud offer); an option not named here is its server model or offer.
    cards: tuple[dict[str, str], ...] = ()
    # workload -> what moving it to another platform or site between periods costs.
    switch_cost: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PeriodChoice:
    workload: str
    option: str
    sku: str | None  # None for a rental
    site: str | None
    servers: int  # servers it occupies (owned) or instances rented
    cost: int  # rental or busy energy over the period
    offer: str | None = None
    share_permille: int = 1000  # of the workload's demand it carries (split: less)


@dataclass(frozen=True)
class PeriodCosts:
    capex: int  # servers bought, and the network and storage the period adds
    residual: int
    rack_rent: int
    site_fixed: int  # setup fees and bandwidth (included, and beyond it by duty)
    energy: int
    cloud: int
    network: int = 0  # of capex: switches, links, NICs and storage nodes added
    resale: int = 0  # owned servers sold at the start: a credit apart from the TCO
    switching: int = 0  # workloads moved to another platform or site at its start

    @property
    def spend(self) -> int:
        """Cash out in the period (residual is a credit at the horizon, not here)."""
        running = self.rack_rent + self.site_fixed + self.energy + self.cloud
        return self.capex + running + self.switching


@dataclass(frozen=True)
class PeriodPlan:
    period: Period
    bought: dict[tuple[str, str], int]  # (sku, site) -> servers bought at its start
    working: dict[tuple[str, str], int]  # (sku, site) -> servers in service in it
    racks: dict[str, int]  # site -> racks held in it (for servers and for switches alone)
    choices: tuple[PeriodChoice, ...]
    costs: PeriodCosts
    # The period's network as a single plan reads it: racks holding servers per site, the
    # compute fabric per (site, class) and storage nodes per (site, kind).
    server_racks: dict[str, int] = field(default_factory=dict)
    fabric: dict[tuple[str, str], FabricCount] = field(default_factory=dict)
    storage: dict[tuple[str, str], int] = field(default_factory=dict)
    # The rented bursts of the mixed options chosen (`OwnedOption.burst`), one per split
    # workload: rentals that run beside its choice, not choices of their own.
    bursts: tuple[PeriodChoice, ...] = ()


@dataclass(frozen=True)
class PhasedSolution:
    status: Status
    mode: Mode = "free"
    periods: tuple[PeriodPlan, ...] = ()
    objective_value: int | None = None  # TCO + penalties
    best_bound: int | None = None
    tco: int | None = None
    penalties: int = 0
    resale: int = 0  # owned servers sold: credited apart from the TCO
    capex_by_year: dict[int, int] = field(default_factory=dict)
    wall_s: float = 0.0
    reason: str | None = None  # why no model was built (a workload with no option)
    # The work the solve took, in the unit of `SolveConfig.work_limit` (machine-independent).
    work: float = 0.0
    solver: str = "CP-SAT"  # which solver answered ("HiGHS" or "CP-SAT")
    search_s: float = 0.0  # of `wall_s`, the search after the model was built
