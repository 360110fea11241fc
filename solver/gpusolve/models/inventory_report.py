"""The plan's inventory section: what it does with each owned server model and
contracted rack. Output models, as `plan.py`'s."""

from __future__ import annotations

from pydantic import Field

from gpusolve.models.common import OutModel


class OwnedServersLine(OutModel):
    """Owned servers of one model at one site, and what the plan does with them."""

    server: str
    site: str
    owned: int
    in_service: int = Field(
        description="Put to work by the plan (racked and powered), here or moved elsewhere."
    )
    moved: dict[str, int] = Field(
        default_factory=dict, description="Moved to another site to work there: site -> servers."
    )
    move_cost: float = Field(default=0.0, description="What moving them costs (on rent).")
    move_downtime_days: float = Field(
        default=0.0,
        description="Days a moved one is out of service; its workload rents meanwhile.",
    )
    sold: int = Field(description="Sold at the resale price given (credited apart).")
    idle: int = Field(description="Neither used nor sold (no resale price): powered off.")
    bought: str | None = Field(default=None, description="When they were bought.")
    price_paid: float | None = Field(default=None, description="Per server: sunk.")
    sunk: float | None = Field(default=None, description="owned x price_paid: never in the TCO.")
    resale_each: float | None = None
    resale: float = Field(default=0.0, description="sold x resale_each: the credit.")
    export_note: str | None = Field(
        default=None,
        description="When the market forbids buying more of them: owned stock is used, "
        "none is bought.",
    )
    unusable: str | None = Field(
        default=None,
        description="Why no workload can run on them where they are, when none can.",
    )


class ContractedRacksLine(OutModel):
    """Racks already contracted at a site, and how the plan uses them."""

    site: str
    racks: int
    months_paid: int = Field(description="Months of the horizon the contract has paid.")
    used: int = Field(description="Contracted racks the plan fills.")
    renewed_months: int = Field(description="Months past the paid term, renewed if used.")
    saved: float = Field(description="Rent the plan does not pay thanks to the contract.")


class Inventory(OutModel):
    """What the team already owned (the requirements' `owned:`): used first, never bought."""

    servers: list[OwnedServersLine] = Field(default_factory=list)
    racks: list[ContractedRacksLine] = Field(default_factory=list)
    sunk: float = Field(default=0.0, description="What the owned servers cost: not in the TCO.")
    resale: float = Field(default=0.0, description="Credit for the servers sold: apart.")
