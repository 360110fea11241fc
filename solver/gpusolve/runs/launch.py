"""`plan --launch DIR` over a plan or a purchase schedule: the files to write.

A plan's deployments each get their folder (`render/launch.py`). A schedule's deployment
gets its files in the period it starts (its first period, or the first after it ran on
other hardware or elsewhere), under `P<index>-month-<start>/`, with an index of the
periods at the top.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import Deployment, Plan
from gpusolve.models.requirements import Requirements
from gpusolve.models.schedule import Schedule, SchedulePeriod
from gpusolve.render.launch import LaunchFile, launch_files


def outcome_launch_files(
    outcome: Plan | Schedule, reqs: Requirements, catalog: Catalog
) -> list[LaunchFile]:
    if isinstance(outcome, Plan):
        return launch_files(outcome, reqs, catalog)
    files: list[LaunchFile] = []
    index = ["# Launch files of the purchase schedule", ""]
    running: dict[str, tuple[object, ...]] = {}
    for period in outcome.periods:
        started = [d for d in period.deployments if running.get(d.workload) != _where(d)]
        running = {d.workload: _where(d) for d in period.deployments}
        if not started:
            continue
        folder = f"P{period.index}-month-{period.start_month}"
        # The period's plan as `launch_files` reads one: the deployments that start here.
        fields: dict[str, Any] = {"status": outcome.status, "deployments": started}
        plan = Plan.model_construct(**fields)
        for f in launch_files(plan, reqs, catalog):
            files.append(LaunchFile(str(PurePosixPath(folder) / f.path), f.text))
        index.append(f"- `{folder}/`: {_period_words(period, started)}")
    index += ["", "Each folder's README.md says what to set and how to run it."]
    files.append(LaunchFile("README.md", "\n".join(index) + "\n"))
    return files


def _where(d: Deployment) -> tuple[object, ...]:
    return (d.server, d.cloud_offer, d.site, d.servers, d.parallel.tp, d.parallel.pp)


def _period_words(period: SchedulePeriod, started: list[Deployment]) -> str:
    names = ", ".join(d.workload for d in started)
    end = period.start_month + period.months
    return f"months {period.start_month}-{end}, starting {names}"
