"""An owned fleet of servers to host: the input of the colocation comparison."""

from __future__ import annotations

from pydantic import Field

from gpusolve.models.catalog import FabricKind
from gpusolve.models.common import Currency, Fraction, Identifier, StrictModel


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
    servers: list[FleetItem] = Field(min_length=1)
    regions: list[str] | None = None
    fabric: FabricKind | None = Field(default=None, description="Fabric the fleet needs.")
    need_ops_24h: bool = False
    need_dual_power: bool = False
    bandwidth_mbps: float = Field(default=100, ge=0, le=1e8, allow_inf_nan=False)
