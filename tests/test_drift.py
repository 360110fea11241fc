"""The analyses analyse the instance the plan solved (issue 34, deliverable 5).

`--top-k`, `--why-not`, `--sensitivity` and the scenario plan's own analyses must re-solve
exactly the instance `plan` solved: the same candidates (the same filters applied: small
jobs rented only, work beyond the horizon dropped) and the same objective. Each solver
entry point is wrapped to record the instance it is handed; every recorded instance must
be the plan's own, or the plan's own with one workload forced onto the why-not item. The
plan's instance must in turn be what the one preparation function gives from the run's
inputs, prepared afresh. Checked on every shipped example, and on one whose filters
change the instance (a job too small to buy servers for beside a real one), where an
analysis that rebuilt the candidates without the filters would differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from tests.factories.files import write_reqs
from tests.support import example_plans
from tests.support.shipped import EXAMPLES, example

from gpusolve.analyses import sensitivity, topk, whynot
from gpusolve.analyses.whynot import forced_onto
from gpusolve.candidates.prepare import prepare
from gpusolve.optimize import alternatives as alternatives_module
from gpusolve.optimize import solve as solve_module
from gpusolve.optimize.ir import Instance, SolveConfig
from gpusolve.optimize.twostage import solve as twostage
from gpusolve.plan import make_plan
from gpusolve.plan.inputs import prepare_run
from gpusolve.plan.solved import Hedged, PlanOptions, Single, Solved

CONFIG = SolveConfig(time_limit_s=600, work_limit=30, workers=1, seed=1)


@dataclass
class Seen:
    """The instances each analysis handed to a solver."""

    single: list[Instance] = field(default_factory=list)  # solve()
    top_k: list[Instance] = field(default_factory=list)  # alternatives()
    reference: list[Instance] = field(default_factory=list)  # the sensitivity's reference
    probed: list[Instance] = field(default_factory=list)  # the sensitivity tasks' base
    two_stage: list[tuple[Instance, ...]] = field(default_factory=list)  # solve_two_stage()


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    record = Seen()
    real_solve = solve_module.solve
    real_alternatives = alternatives_module.alternatives
    real_probe = sensitivity.probe_solve
    real_two = twostage.solve_two_stage

    def solve(instance: Instance, *args: Any, **kwargs: Any) -> Any:
        record.single.append(instance)
        return real_solve(instance, *args, **kwargs)

    def alternatives(instance: Instance, *args: Any, **kwargs: Any) -> Any:
        record.top_k.append(instance)
        return real_alternatives(instance, *args, **kwargs)

    def probe_solve(instance: Instance, config: Any, hint_from: Any) -> Any:
        if hint_from is None:
            record.reference.append(instance)
        return real_probe(instance, config, hint_from)

    def run_tasks(tasks: Any, *args: Any, **kwargs: Any) -> list[Any]:
        # The probes themselves scale a parameter: what matters is the base they scale.
        for task in tasks:
            if isinstance(task, sensitivity.Task):
                record.probed.append(task.instance)
            else:
                record.two_stage.append(tuple(s.instance for s in task.scenarios))
        return []

    def solve_two_stage(scenarios: Any, *args: Any, **kwargs: Any) -> Any:
        record.two_stage.append(tuple(s.instance for s in scenarios))
        return real_two(scenarios, *args, **kwargs)

    monkeypatch.setattr(solve_module, "solve", solve)
    monkeypatch.setattr(alternatives_module, "alternatives", alternatives)
    monkeypatch.setattr(sensitivity, "probe_solve", probe_solve)
    monkeypatch.setattr(sensitivity, "run_tasks", run_tasks)
    monkeypatch.setattr(twostage, "solve_two_stage", solve_two_stage)
    return record


def _analysed(path: Path, seen: Seen) -> tuple[Solved, Seen]:
    """The plan of `path` with --top-k 1 (one instance only) and --why-not a card it does
    not use (`_item`), then its sensitivity; `seen` keeps only what the analyses solved.
    make_plan reads neither option (the analyses do), so the item is chosen from the plan
    itself rather than from a second solve of the same instance."""
    if path in EXAMPLES:  # the shipped examples' plans the other example tests read too
        solved = example_plans.solved(path)
    else:
        solved = make_plan(prepare_run(path, [], []), PlanOptions(config=CONFIG))
    assert solved.plan.status == "optimal", path.name
    top_k = 0 if solved.run.reqs.scenarios else 1
    options = replace(solved.options, config=CONFIG, top_k=top_k, why_not=_item(solved))
    solved = replace(solved, options=options)
    for name in vars(seen):  # forget the plan's own solves
        setattr(seen, name, [])
    solved = solved.with_plan(topk.run(solved))
    solved = solved.with_plan(whynot.run(solved))
    plan = sensitivity.run(solved, bar=False, workers=1)
    assert not any("--sensitivity" in w for w in plan.warnings), plan.warnings
    return solved, seen


def _item(solved: Solved) -> str:
    """A card some candidate runs on that the plan shown does not use (else one it uses)."""
    used = {d.card for d in solved.plan.deployments}
    instance = _instances(solved)[0]
    catalog = solved.run.catalog
    cards = sorted({catalog.servers[o.sku].card for o in instance.owned})
    cards += sorted({catalog.cloud_offers[o.offer].card for o in instance.cloud})
    return next((c for c in cards if c not in used), cards[0])


def _instances(solved: Solved) -> list[Instance]:
    if isinstance(solved.solution, Single):
        return [solved.solution.instance]
    assert isinstance(solved.solution, Hedged)
    return [s.instance for s in solved.solution.weighed]


def _check_single(solved: Solved, seen: Seen) -> None:
    assert isinstance(solved.solution, Single)
    planned = solved.solution.instance
    run = solved.run
    # The plan's instance is the one preparation of the run's inputs.
    assert prepare(run.reqs, run.catalog, run.policies).cand.instance == planned
    assert seen.top_k == [planned]
    assert seen.reference == [planned]
    assert seen.probed and all(i == planned for i in seen.probed)
    meta = solved.solution.prepared.cand.meta
    item = solved.options.why_not
    assert item is not None
    forced = [forced_onto(planned, w, item, meta) for w in planned.workloads]
    if item not in {d.card for d in solved.plan.deployments}:
        assert seen.single, "why-not solved nothing"
    assert all(i in forced for i in seen.single)


def _check_hedged(solved: Solved, seen: Seen) -> None:
    assert isinstance(solved.solution, Hedged)
    hedged = solved.solution
    planned = tuple(s.instance for s in hedged.weighed)
    assert planned == tuple(s.prepared.cand.instance for s in hedged.scenarios)
    metas = [s.prepared.cand.meta for s in hedged.scenarios]
    item = solved.options.why_not
    assert item is not None
    forced = [
        tuple(forced_onto(i, w, item, m) for i, m in zip(planned, metas, strict=True))
        for w in planned[0].workloads
    ]
    # The why-not's forced two-stage solves, the sensitivity's reference and its tasks.
    assert seen.two_stage
    assert all(i == planned or i in forced for i in seen.two_stage)
    assert planned in seen.two_stage
    assert seen.single == [], "a hedged plan's analyses solve the two-stage model only"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_analysis_solves_the_plans_own_instance(path: Path, seen: Seen) -> None:
    solved, after = _analysed(path, seen)
    if solved.run.reqs.scenarios:
        _check_hedged(solved, after)
    else:
        _check_single(solved, after)


def test_the_filters_reach_every_analysis(tmp_path: Path, seen: Seen) -> None:
    """A job too small to buy servers for keeps only its rentals: the plan's instance
    differs from the unfiltered candidates, and every analysis sees the filtered one."""
    from gpusolve.candidates.generate import build_candidates

    data = example("finetune-7b-deadline.yaml")
    # Minutes of GPU work, in steps small enough that a checkpoint stall does not reject
    # every rental (H16), in market global (the rentals are H800s and H20s).
    tiny = {**data["workloads"][0], "name": "tiny", "tokens": 1e6, "global_batch": 8}
    tiny.update(micro_batch=1, deadline_hours=None)
    data["workloads"].append(tiny)
    data["market"] = "global"
    path = write_reqs(tmp_path, data)
    run = prepare_run(path, [], [])
    whole = build_candidates(run.reqs, run.catalog, run.policies).instance
    solved, after = _analysed(path, seen)
    assert isinstance(solved.solution, Single)
    assert solved.solution.instance != whole  # the filter did change the instance
    assert not any(o.workload == "tiny" for o in solved.solution.instance.owned)
    _check_single(solved, after)
