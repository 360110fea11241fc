"""The one sequence that turns a run's inputs into the instance `plan` solves.

Candidates (`generate.build_candidates`), then the filters before a solve
(`filters.py`): work too small to buy servers for keeps only its rentals (every one that
fits the work, however short the run), and options
whose runs do not fit in the horizon are dropped. Every caller that needs "the instance
the plan solves" — the single plan, each scenario of a two-stage plan, the frontier's
points, an efficiency probe of the sensitivity analysis — prepares it here, so a filter
added once applies to all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpusolve.candidates.filters import beyond_horizon, rent_only, short_run_policies, small_jobs
from gpusolve.candidates.generate import build_candidates
from gpusolve.candidates.preferences import Key
from gpusolve.candidates.records import Candidates
from gpusolve.models.catalog import Catalog
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.models.requirements import Requirements


@dataclass(frozen=True)
class Prepared:
    """A run's candidates as `plan` solves them, with what the filters decided."""

    reqs: Requirements
    catalog: Catalog
    cand: Candidates
    small: dict[str, str]  # workload -> why it is too small to buy servers for
    too_long: tuple[str, ...]  # workloads that had options, none of which fits the horizon


def prepare(
    reqs: Requirements,
    catalog: Catalog,
    policies: dict[str, WorkloadPolicy],
    whole: Catalog | None = None,
    *,
    explain: bool = False,
    elsewhere: Mapping[str, Sequence[frozenset[Key]]] | None = None,
) -> Prepared:
    """The candidates for `reqs` on `catalog`, filtered as `plan` solves them. `whole`: the
    full catalogue when `catalog` is a part of it (what counts as a small job depends on
    the fastest card of all). `explain`: keep the options that violate a requirement,
    tagged (`build_candidates`), for an explanation. `elsewhere`: what the allowed options
    outside a part `catalog` miss, per workload (`build_candidates`)."""
    small = small_jobs(reqs, whole or catalog)
    cand = build_candidates(
        reqs, catalog, short_run_policies(policies, small), explain=explain, elsewhere=elsewhere
    )
    if small:  # minutes of work: never buy servers for it
        cand = rent_only(cand, small)
    had_options = set(cand.instance.workloads) - set(cand.workloads_without_options())
    cand = beyond_horizon(cand, reqs)
    too_long = tuple(w for w in cand.workloads_without_options() if w in had_options)
    return Prepared(reqs, catalog, cand, small, too_long)
