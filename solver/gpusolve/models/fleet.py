"""An owned fleet of servers to host: the input of the colocation comparison."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpusolve.models.catalog import FabricKind
from gpusolve.models.common import Currency, Fraction, Identifier, RegionList, StrictModel
from gpusolve.models.inventory import Owned


class FleetItem(StrictModel):
    server: Identifier
    count: int = Field(ge=1, le=100_000)  # servers of one model; 10^5 is a whole campus
    multi_node: bool = Field(
        default=False, description="These servers run one job together and need the fabric."
    )


class Fleet(StrictModel):
    schema_: str | None = Field(default=None, alias="$schema")
    currency: Currency = "CNY"
    horizon_months: int = Field(default=36, ge=1, le=120)
    utilisation: Fraction = Field(default=0.7, gt=0)  # 0 would mean the fleet is off
    servers: list[FleetItem] = Field(
        default_factory=list, description="Servers to host (bought or to buy)."
    )
    owned: Owned = Field(
        default_factory=Owned,
        description="Servers already owned and racks already contracted (as in the "
        "requirements): the owned servers join the fleet; each offer where racks are "
        "contracted pays them only past their paid term.",
    )
    market: Literal["cn", "global"] | None = Field(
        default=None,
        description="As in the requirements: the compliance lines judge each card in it.",
    )
    allow_restricted: list[Identifier] = Field(
        default_factory=list,
        description="Card or server ids that may be bought in market cn although restricted.",
    )
    regions: RegionList | None = None
    fabric: FabricKind | None = Field(default=None, description="Fabric the fleet needs.")
    need_ops_24h: bool = False
    need_dual_power: bool = False
    bandwidth_mbps: float = Field(default=100, ge=0, le=1e8, allow_inf_nan=False)

    @model_validator(mode="after")
    def _something_to_host(self) -> Fleet:
        if not self.servers and not self.owned.servers:
            raise ValueError("give servers: or owned: servers to host")
        return self
