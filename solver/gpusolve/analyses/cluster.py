"""Sweeps on a Ray cluster: `--cluster ADDRESS` or RAY_ADDRESS sends the sweeps of a run
(the sensitivity's parameters, the risk's re-planned draws) to Ray instead of the local
process pool. Ray is the optional extra `ray`.

A task travels by pickle; the run's inputs do not (the rule policies hold compiled CEL
programs), so each Ray worker reads the run's files again, once per worker process, and
the files must be readable where the workers run (a shared path, or a one-machine
cluster). Each task is one deterministic solve or search, so a sweep gives the same
figures on the cluster as on the pool.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from gpusolve.errors import InputError


class Sweepable(Protocol):
    def analyse(self, inputs: Any) -> Any: ...


@dataclass(frozen=True)
class Files:
    """The run's files, for a Ray worker to read again."""

    requirements: Path
    catalog_paths: tuple[Path, ...]
    rules_paths: tuple[Path, ...]


@dataclass(frozen=True)
class Cluster:
    address: str  # a Ray address; "local" starts a cluster in this process
    files: Files

    def run(self, tasks: Sequence[Sweepable]) -> list[Any]:
        return on_ray(tasks, self.files, self.address)

    @property
    def name(self) -> str:
        return f"Ray cluster at {self.address}"


def cluster_of(address: str | None, files: Files) -> Cluster | None:
    """The cluster asked for: `address`, else RAY_ADDRESS; None: the local pool."""
    chosen = address or os.environ.get("RAY_ADDRESS")
    return Cluster(chosen, files) if chosen else None


@cache
def _inputs_of(files: Files) -> Any:
    from gpusolve.candidates.scaling import CandidateInputs
    from gpusolve.plan.inputs import prepare_run

    run = prepare_run(files.requirements, files.catalog_paths, files.rules_paths)
    return CandidateInputs(run.reqs, run.catalog, run.policies)


@cache
def _scenario_inputs_of(files: Files) -> Any:
    from gpusolve.candidates.scaling import CandidateInputs
    from gpusolve.plan.twostage import scenario_inputs

    run = _inputs_of(files)
    return [
        CandidateInputs(reqs, catalog, run.policies)
        for _, _, reqs, catalog in scenario_inputs(run.reqs, run.catalog)
    ]


def _on_worker(task: Sweepable, files: Files) -> Any:
    # A hedged plan's task reads one set of inputs per scenario (`per_scenario`).
    if getattr(task, "per_scenario", False):
        return task.analyse(_scenario_inputs_of(files))
    return task.analyse(_inputs_of(files))


def on_ray(tasks: Sequence[Sweepable], files: Files, address: str) -> list[Any]:
    """Every task's result on the Ray cluster at `address`, in the tasks' order."""
    try:
        import ray  # the optional extra `ray`
    except ImportError as exc:
        raise InputError.single(
            "--cluster" if address != os.environ.get("RAY_ADDRESS") else "RAY_ADDRESS",
            f"a Ray cluster ({address}) needs Ray, which is not installed",
            hint="pip install 'gpusolve[ray]', or drop --cluster (unset RAY_ADDRESS) to use "
            "the local process pool",
        ) from exc
    ray.init(address=None if address == "local" else address, ignore_reinit_error=True)
    remote = ray.remote(_on_worker)
    shared = ray.put(files)
    return list(ray.get([remote.remote(t, shared) for t in tasks]))
