"""What every layout search shares: its scope and its result, the node-count grid, the order of
infeasible attempts (closest first) and the bookkeeping both searches keep (`Attempts`:
feasible layouts, rejections with numbers, the closest miss)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import ConfigEstimate
from gpusolve.estimate.shapes import Arch
from gpusolve.models.params import Params


@dataclass(frozen=True)
class SearchScope:
    """What one workload's search covers: the model's shape, the hardware, the estimator's
    parameters, the most nodes (`limit`), whether fractions of a node are tried too
    (`whole_nodes=False`) and whether every faster size is kept (`every_size`)."""

    arch: Arch
    hw: Hardware
    params: Params
    limit: int
    whole_nodes: bool
    every_size: bool = False


@dataclass(frozen=True)
class SearchResult:
    """Feasible, non-dominated layouts (ascending GPUs) and why the others were rejected."""

    feasible: list[ConfigEstimate] = field(default_factory=list)
    rejections: list[str] = field(default_factory=list)

    @property
    def best(self) -> ConfigEstimate | None:
        """Training: the fewest GPUs meeting the deadline, else the fastest.
        Inference: the fewest GPUs."""
        if not self.feasible:
            return None
        meeting = [e for e in self.feasible if e.meets_deadline]
        if meeting:
            return min(meeting, key=lambda e: (e.gpus, e.time_to_train_s or 0.0))
        return min(self.feasible, key=lambda e: (e.time_to_train_s or math.inf, e.gpus))


def node_counts(max_nodes: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, 16, 24, ... up to max_nodes (and max_nodes itself)."""
    out: set[int] = set()
    p = 1
    while p <= max_nodes:
        out.add(p)
        if p * 3 // 2 <= max_nodes and p >= 2:
            out.add(p * 3 // 2)
        p *= 2
    if max_nodes >= 1:
        out.add(max_nodes)
    return sorted(out)


def closeness(e: ConfigEstimate) -> tuple[float, ...]:
    """Order infeasible attempts: memory overshoot first, then everything else."""
    usable = e.usable_memory_bytes
    over = e.memory.total_bytes / usable if usable > 0 else math.inf
    return (
        0.0 if e.fits else 1.0,
        over if not e.fits else 0.0,
        len(e.reasons),
        e.comm_fraction + e.checkpoint_stall_fraction,
    )


def faster(a: ConfigEstimate, b: ConfigEstimate | None) -> bool:
    if b is None:
        return True
    ta, tb = a.time_to_train_s or math.inf, b.time_to_train_s or math.inf
    return ta < tb


def where(hw: Hardware, gpus: int, nodes: int) -> str:
    label = hw.label or hw.card.id
    if nodes == 1 and gpus < hw.gpus_per_node:
        return f"{gpus} GPU(s) of one {label}"
    return f"{nodes} × {label} ({gpus} GPUs)"


@dataclass
class Attempts:
    """The skeleton both searches fill: feasible layouts, sentences on what was rejected, and
    the closest infeasible attempt (by `closeness`), turned into a `SearchResult`."""

    feasible: list[ConfigEstimate] = field(default_factory=list)
    rejections: list[str] = field(default_factory=list)
    closest: ConfigEstimate | None = None

    def near_miss(self, est: ConfigEstimate | None) -> None:
        """Keep `est` if it is the closest infeasible attempt so far."""
        if est is not None and (self.closest is None or closeness(est) < closeness(self.closest)):
            self.closest = est

    def closest_line(self, where: str, with_replicas: bool = False) -> str:
        assert self.closest is not None
        lay = self.closest.layout
        layout = lay.describe(True) if with_replicas else lay.describe()
        return f"{where}, closest layout {layout}: {'; '.join(self.closest.reasons)}"

    def result(self) -> SearchResult:
        return SearchResult(self.feasible, self.rejections)
