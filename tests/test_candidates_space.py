"""The candidate space: every layout size that meets a deadline, so the optimum is monotone.

From requirements to a proven optimum (candidates, rules, CP-SAT) on a small slice of the
shipped catalogue: loosening a deadline or raising a budget never raises the optimum;
adding a requirement never lowers it. The 32B continued-pretraining case a user reported
(a looser deadline that cost more, because only the fewest-node layout was a candidate)
is a regression test on the whole shipped catalogue.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tests.factories import instances as factory
from tests.support.shipped import ROOT

from gpusolve.candidates.generate import build_candidates
from gpusolve.candidates.records import Candidates
from gpusolve.load import load_catalog
from gpusolve.models.catalog import Catalog
from gpusolve.models.money import to_money
from gpusolve.models.plan import Plan
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir
from gpusolve.optimize.solve import solve
from gpusolve.render.markdown import plan_markdown
from gpusolve.render.text import plan_text
from gpusolve.rules.policy import evaluate_policies

CONFIG = ir.SolveConfig(time_limit_s=600, work_limit=30, workers=1, seed=1)
# Each example builds candidates (the layout search on every server and offer): a few
# examples keep the file near 20 s; derandomized, so CI sees the same examples every run.
FEW = settings(max_examples=4, deadline=None, derandomize=True)
CHEAP = settings(max_examples=8, deadline=None, derandomize=True)  # budgets reuse candidates

# A slice of the shipped catalogue: multi-node servers on two fabrics, a PCIe box, sites
# with InfiniBand, RoCE and plain Ethernet, rentals of three data-centre cards.
SERVERS = ("hgx-h800-8gpu", "hgx-a800-8gpu", "xe8545-4gpu-a100-sxm", "pcie8-l40s")
COLO = ("wujiang-hub-21kw-ib", "nanjing-jiangbei-12kw-roce", "suzhou-sip-6.6kw-air")
CLOUD = ("cloud-8x-h800-shanghai", "cloud-8x-a800-jiangsu", "cloud-8x-h20-jiangsu")


@cache
def shipped() -> Catalog:
    return load_catalog().catalog


@cache
def small_catalog() -> Catalog:
    full = shipped()
    return full.model_copy(
        update={
            "servers": {k: full.servers[k] for k in SERVERS},
            "colo_offers": {k: full.colo_offers[k] for k in COLO},
            "cloud_offers": {k: full.cloud_offers[k] for k in CLOUD},
        }
    )


def candidates(data: dict[str, Any], catalog: Catalog) -> Candidates:
    reqs = Requirements.model_validate(data)
    policies, _ = evaluate_policies(reqs, catalog)
    return build_candidates(reqs, catalog, policies)


@cache
def _small_candidates(key: str) -> Candidates:
    return candidates(json.loads(key), small_catalog())


def optimum(data: dict[str, Any], catalog: Catalog | None = None) -> int | None:
    """The proven optimum (TCO plus penalties), or None when no plan exists. On the small
    catalogue the candidates of one document are built once: a budget only sets the
    instance's cap (the layouts do not depend on it), as `build_candidates` does."""
    if catalog is not None:
        cand = candidates(data, catalog)
        instance = cand.instance
    else:
        budget = data.get("budget", {})
        unbudgeted = {k: v for k, v in data.items() if k != "budget"}
        cand = _small_candidates(json.dumps(unbudgeted, sort_keys=True))
        instance = _with_budget(cand.instance, budget)
    if cand.workloads_without_options():
        return None
    solution = solve(instance, CONFIG)
    if solution.status == "infeasible":
        return None
    assert solution.status == "optimal", solution.status
    assert solution.objective_value is not None
    return solution.objective_value


def _with_budget(instance: ir.Instance, budget: dict[str, float]) -> ir.Instance:
    requirements = dict(instance.requirements)
    caps: dict[str, int | None] = {"capex_max": None, "monthly_max": None}
    for field, name in (("capex_max", "capex"), ("monthly_max", "monthly")):
        if field in budget:
            caps[field] = to_money(budget[field])
            requirements[name] = ir.Requirement(name, f"{name} cap", 2)
    return dataclasses.replace(instance, requirements=requirements, **caps)


def _training(name: str, preset: str, tokens: float, deadline_h: float, runs: int) -> Any:
    return {
        "name": name,
        "kind": "pretrain" if preset == "qwen2.5-14b" else "full_finetune",
        "model": {"preset": preset},
        "precision": "bf16",
        "optimizer": "adamw",
        "seq_len": 4096,
        "global_batch": 256,
        "tokens": tokens,
        "runs": runs,
        "deadline_hours": deadline_h,
    }


@st.composite
def training_reqs(draw: st.DrawFn) -> dict[str, Any]:
    preset = draw(st.sampled_from(["llama-2-7b", "qwen2.5-14b"]))
    tokens = draw(st.sampled_from([2e9, 1e10, 5e10, 2e11]))
    deadline_h = draw(st.sampled_from([24.0, 72.0, 200.0, 700.0, 2000.0]))
    return {
        "currency": "CNY",
        "horizon_months": draw(st.sampled_from([12, 36])),
        "workloads": [_training("job", preset, tokens, deadline_h, draw(st.integers(1, 3)))],
    }


def _with_deadline(data: dict[str, Any], factor: float) -> dict[str, Any]:
    job = {**data["workloads"][0]}
    job["deadline_hours"] = job["deadline_hours"] * factor
    return {**data, "workloads": [job]}


@FEW
@given(training_reqs(), st.sampled_from([1.3, 2.0, 4.0]))
def test_a_looser_deadline_never_costs_more(data: dict[str, Any], factor: float) -> None:
    tight = optimum(data)
    assume(tight is not None)
    loose = optimum(_with_deadline(data, factor))
    assert loose is not None, "a plan that meets the tighter deadline meets the looser one"
    assert tight is not None and loose <= tight


@CHEAP
@given(training_reqs(), st.sampled_from([0.3, 0.6, 1.0]), st.sampled_from([1.5, 3.0]))
def test_a_larger_budget_never_costs_more(
    data: dict[str, Any], share: float, factor: float
) -> None:
    """A capex cap at a share of the uncapped plan's TCO, then raised by `factor`."""
    free = optimum(data)
    assume(free is not None)
    assert free is not None
    cap = share * free
    capped = optimum({**data, "budget": {"capex_max": cap}})
    assume(capped is not None)
    raised = optimum({**data, "budget": {"capex_max": cap * factor}})
    assert raised is not None and capped is not None
    assert free <= raised <= capped


@FEW
@given(training_reqs(), st.sampled_from(["regions", "deadline", "monthly"]))
def test_an_added_requirement_never_costs_less(data: dict[str, Any], extra: str) -> None:
    base = optimum(data)
    assume(base is not None)
    assert base is not None
    if extra == "regions":
        stricter = {**data, "regions": {"allowed": ["jiangsu-south"]}}
    elif extra == "deadline":
        stricter = _with_deadline(data, 0.5)
    else:
        stricter = {**data, "budget": {"monthly_max": 5_000}}
    more = optimum(stricter)
    assert more is None or more >= base


def _cpt_32b(deadline_h: float) -> dict[str, Any]:
    """The reported case: Qwen2.5-32B continued pretraining on 350B tokens, one run."""
    job = _training("cpt-32b", "qwen2.5-32b", 3.5e11, deadline_h, 1)
    job.update(kind="pretrain", global_batch=512)
    return {"currency": "CNY", "horizon_months": 36, "workloads": [job]}


def test_32b_continued_pretraining_costs_no_more_at_a_looser_deadline() -> None:
    """Before every layout size was a candidate: 480,036 at 2,800 h, 541,403 at 4,000 h
    (the fewest rented H800 instances meeting 4,000 h cost more than more of them for
    fewer hours)."""
    tight = optimum(_cpt_32b(2800), shipped())
    loose = optimum(_cpt_32b(4000), shipped())
    assert tight is not None and loose is not None
    assert loose <= tight


def test_every_size_that_meets_the_deadline_is_a_candidate() -> None:
    """Per server or cloud offer, the layouts of the looser deadline include every size
    the tighter one has: the space only grows when a deadline loosens."""

    def sizes(deadline_h: float) -> dict[str, set[int]]:
        cand = candidates(_cpt_32b(deadline_h), small_catalog())
        out: dict[str, set[int]] = {}
        for meta in cand.meta.values():
            out.setdefault(meta.server or f"cloud:{meta.cloud_offer}", set()).add(meta.nodes)
        return out

    tight, loose = sizes(2800), sizes(4000)
    assert any(len(n) > 1 for n in loose.values()), "more than the smallest size"
    for candidate, nodes in tight.items():
        assert max(nodes) in loose.get(candidate, set()), candidate
        assert min(loose[candidate]) <= min(nodes), candidate


def test_a_larger_layout_with_more_headroom_survives_pruning_and_wins_the_tie_break() -> None:
    """A day service needs 3 servers; a night job fits on 2 (10 % headroom) or 3 (30 %).
    The third server is bought for the day anyway, so both night layouts cost the same and
    the tie-break takes the one with more headroom: pruning must not drop it (it did while
    headroom was not compared)."""
    sku = factory.sku("k", capex=1000, power_w=2000, rack_units=2)
    site = factory.site("s", racks=2, rent=10, energy={"k": 5}, region="south")

    def option(key: str, workload: str, servers: int, slot: ir.Slot, headroom: int) -> Any:
        return factory.owned(
            key, workload, servers, slot, sku="k", sites=("s",), headroom_permille=headroom
        )

    owned = (
        option("day|3n", "day", 3, "day", 0),
        option("night|2n", "night", 2, "night", 100),
        option("night|3n", "night", 3, "night", 300),
    )
    instance = factory.instance(("day", "night"), owned, sites=(site,), skus=(sku,))
    solution = solve(instance, CONFIG)
    assert solution.status == "optimal"
    assert {c.workload: c.option for c in solution.choices}["night"] == "night|3n"


def test_the_plan_says_over_what_the_optimum_holds(gpusolve: Any) -> None:
    """JSON carries the counts; the text and markdown headlines print them."""
    path = ROOT / "examples" / "finetune-7b-deadline.yaml"
    result = gpusolve("plan", "-q", str(path), "--format", "json")
    assert result.code == 0, result.err
    plan = Plan.model_validate(json.loads(result.out))
    layouts, workloads = plan.solver.candidate_layouts, plan.solver.candidate_workloads
    assert workloads == 1 and layouts is not None and layouts > workloads
    line = f"ptimal over {layouts:,} layouts of 1 workload ("
    assert line in plan_text(plan) and line in plan_markdown(plan)
