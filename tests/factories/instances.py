"""Optimiser instances (`ir.Instance`) built by hand, and the solve settings the optimiser
tests use. The default instance: two server kinds (a 10 kW / 8 U server for 1000 and a
20 kW one for 800), one site `sz` of ten 20 kW racks at 5 a month with energy 10 per server
per month, and a 12-month horizon."""

from __future__ import annotations

from collections.abc import Mapping

from gpusolve.optimize.ir import (
    CloudOption,
    Instance,
    OwnedOption,
    Placement,
    Site,
    Sku,
    Slot,
    SolveConfig,
)

# Solve settings: one (or two) workers, a fixed seed, and work enough that a small model is
# always proven optimal: a deterministic limit (CP-SAT's work), the wall clock far beyond it,
# so that no test's verdict depends on the machine's load.
ONE = SolveConfig(time_limit_s=600, work_limit=20, workers=1, seed=1)
TWO = SolveConfig(time_limit_s=600, work_limit=20, workers=2, seed=1)

# A 10 kW / 8 U server for 1000 (energy 10 per month) and a 20 kW one.
H100 = Sku("h100", capex=1000, power_w=10_000, rack_units=8, cooling=frozenset({"air"}))
HOT = Sku("hot", capex=800, power_w=20_000, rack_units=8, cooling=frozenset({"air"}))


def sku(
    id_: str, capex: int, power_w: int, rack_units: int, cooling: str = "air", **kw: object
) -> Sku:
    """A server SKU; `kw` sets the rest (`residual`, `fabric`, `nics`, ...)."""
    return Sku(id_, capex, power_w, rack_units, frozenset({cooling}), **kw)  # type: ignore[arg-type]


def site(
    id_: str = "sz",
    rack_w: int = 20_000,
    racks: int = 10,
    rent: int = 5,
    bandwidth: int = 0,
    energy: int | Mapping[str, int] = 10,
    *,
    units: int = 42,
    region: str = "east",
    cooling: str = "air",
    **kw: object,
) -> Site:
    """A colocation site; `energy` per server-month, one figure for the default SKUs or
    one per SKU; `kw` sets the rest (`storage`, `setup_fee`, ...)."""
    per_sku = {"h100": energy, "hot": energy} if isinstance(energy, int) else dict(energy)
    return Site(
        id_,
        region,
        cooling,
        rack_w,
        units,
        racks,
        rent,
        bandwidth,
        per_sku,
        **kw,  # type: ignore[arg-type]
    )


def owned(
    key: str,
    workload: str,
    servers: int,
    slot: Slot = "always",
    sku: str = "h100",
    sites: tuple[str | Placement, ...] = ("sz",),
    **kw: object,
) -> OwnedOption:
    """An owned option; a site given by name is placed there with no penalty or busy energy."""
    placements = tuple(s if isinstance(s, Placement) else Placement(s) for s in sites)
    return OwnedOption(key, workload, sku, servers, slot, placements, **kw)  # type: ignore[arg-type]


def instance(
    workloads: tuple[str, ...],
    opts: tuple[OwnedOption, ...],
    cloud: tuple[CloudOption, ...] = (),
    sites: tuple[Site, ...] = (site(),),
    skus: tuple[Sku, ...] = (H100, HOT),
    horizon_months: int = 12,
    **kw: object,
) -> Instance:
    return Instance(
        workloads=workloads,
        skus={k.id: k for k in skus},
        sites={s.id: s for s in sites},
        owned=opts,
        cloud=cloud,
        horizon_months=horizon_months,
        **kw,  # type: ignore[arg-type]
    )


def rented(
    key: str,
    workload: str,
    instances: int,
    cost_total: int,
    offer: str = "cloud",
    region: str = "cloud",
    **kw: object,
) -> CloudOption:
    """Renting `instances` of a cloud offer for `cost_total` over the horizon."""
    return CloudOption(key, workload, offer, region, instances, cost_total, **kw)  # type: ignore[arg-type]
