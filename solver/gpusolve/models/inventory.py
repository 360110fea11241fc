"""What a team already owns: servers by model, count and site, and contracted
racks. The requirements' and the fleet's `owned:` block; `candidates/owned.py` and
`optimize/inventory.py` say what the plan does with it."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from gpusolve.models.common import Identifier, StrictModel

# Servers or racks of one entry (estimate): 10^5 racks is a gigawatt campus at 10 kW a
# rack, beyond any one colocation site; 10^5 servers is a whole campus, as the fleet's bound
# (models/fleet.py). Owned servers must also fit the racks their site has
# (load/inventory.py); a million of either planned a resale credit of 350 billion CNY.
MAX_COUNT = 100_000
MAX_MONEY = 1e15  # as the requirements' budgets

MAX_TERM_MONTHS = 240  # 20 years: longer than any colocation contract


BoughtDate = Annotated[
    str,
    Field(
        pattern=r"^(19|20)\d{2}(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?)?$",
        description="a year, year-month or date, e.g. 2024, 2024-03 or 2024-03-15",
    ),
]


class OwnedServers(StrictModel):
    """Servers the team already owns, at one colocation site: sunk money, never
    in the TCO; the plan puts them in service first, or leaves them idle, or sells them."""

    server: Identifier = Field(description="Catalogue server id (`gpusolve catalog list`).")
    count: int = Field(ge=1, le=MAX_COUNT, description="How many of them are owned.")
    site: Identifier = Field(
        description="Colo offer id where they are hosted; the plan may move them (move_cost)."
    )
    move_cost: float | None = Field(
        default=None,
        ge=0,
        le=MAX_MONEY,
        allow_inf_nan=False,
        description="What moving one of them to another colocation site costs (de-rack, "
        "packing, insured freight, re-rack, burn-in test). Default in CNY: 8,000, an "
        "estimate (candidates/owned.py); other currencies: state it. `movable: false` "
        "keeps them where they are.",
    )
    move_downtime_days: float = Field(
        default=7,
        ge=0,
        le=365,
        description="Days a moved server is out of service (estimate: a week door to door, "
        "racked and tested). The workload placed on moved servers rents its cheapest "
        "rental meanwhile (`plan`); `colo` states the days.",
    )
    movable: bool = Field(default=True, description="false: they stay at `site`.")
    bought: BoughtDate | None = Field(
        default=None, description="When they were bought (shown, not used in any figure)."
    )
    price_paid: float | None = Field(
        default=None,
        ge=0,
        le=MAX_MONEY,
        description="What one server cost when bought: sunk, shown apart and never in the TCO.",
    )
    resale: float | None = Field(
        default=None,
        ge=0,
        le=MAX_MONEY,
        description="What one server fetches if sold now. Given: servers the plan does not "
        "use are sold and this is credited on its own line, apart from the TCO. Absent: they "
        "are left idle (powered off, no cost).",
    )


class ContractedRacks(StrictModel):
    """Racks already contracted (and paid) at a colocation site."""

    site: Identifier = Field(description="Colo offer id of the racks.")
    racks: int = Field(ge=1, le=MAX_COUNT, description="Racks under contract.")
    term_months: int = Field(
        ge=0,
        le=MAX_TERM_MONTHS,
        description="Months of the contract left, already paid: these racks cost nothing for "
        "those months. Past the term, a rack the plan still uses is renewed at the offer's "
        "monthly price; the offer's own availability comes on top of them.",
    )


class Owned(StrictModel):
    """What the team already has: servers by model, count and site, and contracted racks."""

    servers: list[OwnedServers] = Field(default_factory=list)
    racks: list[ContractedRacks] = Field(default_factory=list)

    @model_validator(mode="after")
    def _once_each(self) -> Owned:
        pairs = [(s.server, s.site) for s in self.servers]
        twice = sorted({p for p in pairs if pairs.count(p) > 1})
        if twice:
            server, site = twice[0]
            raise ValueError(
                f"{server} at {site} is listed twice; give one entry with the total count"
            )
        sites = [r.site for r in self.racks]
        again = sorted({s for s in sites if sites.count(s) > 1})
        if again:
            raise ValueError(f"racks at {again[0]} are listed twice; give one entry per site")
        return self

    def stock(self) -> dict[tuple[str, str], int]:
        """Servers owned per (server id, site)."""
        return {(s.server, s.site): s.count for s in self.servers}
