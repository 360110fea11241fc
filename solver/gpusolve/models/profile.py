"""What `gpusolve profile` reports about an nvidia-smi log (JSON output)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from gpusolve.models.common import StrictModel, schema_version_field

Bound = Literal["compute", "memory_bandwidth", "stalled", "mixed", "idle"]


class Stat(StrictModel):
    """A time-weighted mean with the extremes (None where the log did not report it)."""

    mean: float | None = None
    min: float | None = None
    max: float | None = None


class GpuProfile(StrictModel):
    gpu: str = Field(description="The GPU index (or bus id) as the log names it; 'all' overall.")
    samples: int
    seconds: float | None = Field(default=None, description="Time covered, when timestamped.")
    sm_pct: Stat = Field(description="SM (kernel) activity, %.")
    mem_pct: Stat = Field(description="Memory-controller activity, %.")
    fb_used_gb: Stat = Field(description="Frame-buffer memory used, GB (10^9 bytes).")
    power_w: Stat
    power_of_tdp: float | None = Field(default=None, description="Mean power / the card's TDP.")
    gpu_temp_c: Stat
    memory_temp_c: Stat
    sm_clock_mhz: Stat
    loaded_sm_clock_mhz: Stat = Field(description="SM clock while SM activity is high.")
    mem_clock_mhz: Stat
    power_violation_pct: Stat = Field(description="dmon pviol: time power-capped, %.")
    thermal_violation_samples: int = Field(description="Samples with a thermal violation.")
    pcie_rx_mbs: Stat
    pcie_tx_mbs: Stat
    bound: Bound
    why: str = Field(description="The H11 reading behind `bound`.")


class ProfileReport(StrictModel):
    kind: Literal["profile"] = Field(default="profile", description="What this result is.")
    schema_version: int = schema_version_field()
    source: str
    format: Literal["dmon", "csv"]
    columns: list[str]
    card: str | None = None
    gpus: list[GpuProfile]
    overall: GpuProfile
    warnings: list[str]
    notes: list[str]
