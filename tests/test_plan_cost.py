"""Cost a user can add up: the objective itemised, and every delta a difference of two
itemised plans, worded by its sign (issue 21, deliverable 3)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from tests.support.example_plans import plan_json
from tests.support.shipped import EXAMPLES, ROOT

from gpusolve.cli import main
from gpusolve.models.plan import Cost, Plan
from gpusolve.render import render_plan

KINDS = (
    "servers_capex",
    "rack_rent",
    "energy",
    "bandwidth",
    "cloud_rental",
    "network",
    "storage",
)
MONEY_LABELS = {
    "servers (capex)",
    "network (capex)",
    "storage (capex)",
    "rack rent",
    "energy",
    "bandwidth",
    "cloud rental",
}
WORDED = re.compile(r"\b(dearer|cheaper|higher|lower) by (\S+)")


@cache
def _run(*args: str) -> dict[str, Any]:
    """One in-process run of `gpusolve plan ... --format json` (cached across tests)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(["plan", "-q", *args, "--format", "json"])
        except SystemExit as exc:
            assert not exc.code, exc.code
    data: dict[str, Any] = json.loads(out.getvalue())
    return data


def _global_market(name: str, folder: Path) -> Path:
    """The example in market `global`, so that a --why-not of a card restricted for China
    is answered by a forced plan (whose deltas are checked) and not by the restriction."""
    copy = folder / name
    text = (ROOT / "examples" / name).read_text(encoding="utf-8")
    copy.write_text(text + "\nmarket: global\n", encoding="utf-8")
    return copy


def _check_cost_adds_up(cost: Cost) -> None:
    b = cost.breakdown
    for kind in KINDS:
        lines = [i.amount for i in b.items if i.kind == kind]
        assert sum(lines) == getattr(b, kind), kind
        # whole units, printed exactly, never negative (a resale credit is not a TCO line);
        # a network line may cost nothing (NICs inside a server's price are still parts)
        if kind == "network":
            assert all(a == int(a) >= 0 for a in lines)
            continue
        assert all(a == int(a) > 0 for a in lines)
    assert sum(getattr(b, k) for k in KINDS) == cost.tco
    assert cost.capex == b.servers_capex + b.network + b.storage
    assert sum(p.amount for p in b.penalty_items) == b.penalties == cost.penalties
    assert all(p.rule and p.reason and p.deployment for p in b.penalty_items)
    if cost.horizon_resale is not None:
        assert cost.horizon_resale.amount == sum(ln.amount for ln in cost.horizon_resale.lines) > 0
    assert cost.objective_value == cost.tco - cost.credits + cost.penalties
    opex = cost.tco - cost.capex
    assert cost.monthly_opex == round(opex / cost.horizon_months, 2)


def _figures(text: str) -> list[int]:
    return [int(n.replace(",", "")) for n in re.findall(r"-?\d[\d,]*", text)]


def _text_cost_section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Cost breakdown"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
    return lines[start + 1 : end]


def _check_text_adds_up(text: str, cost: Cost) -> None:
    """Read the printed section back: the lines under each total sum to it, the totals to
    the TCO, the penalties to theirs, and TCO + penalties to the objective."""
    groups: list[tuple[str, int, list[int]]] = []
    for line in _text_cost_section(text):
        total = re.match(r"^  (\S.*?)\s+(-?[\d,]+) " + cost.currency, line)
        item = re.match(r"^      \s*(-?[\d,]+)  \S", line)
        if total:
            groups.append((total.group(1), _figures(total.group(2))[0], []))
        elif item:
            groups[-1][2].append(_figures(item.group(1))[0])
    printed = {label: value for label, value, _ in groups}
    for label, value, items in groups:
        if items:
            assert sum(items) == value, label
    money = [*MONEY_LABELS]
    assert sum(printed.get(k, 0) for k in money) == printed["TCO"] == cost.tco
    credit = printed.get("resale credit, sold now", 0)
    credit += printed.get("resale credit at the horizon", 0)
    assert credit == cost.credits
    if cost.penalties:
        assert printed["soft-rule penalties"] == cost.penalties
    else:
        assert "soft-rule penalties" not in printed
    if cost.penalties or credit:
        (objective,) = [v for k, v in printed.items() if k.startswith("objective = TCO")]
        assert printed["TCO"] - credit + printed.get("soft-rule penalties", 0) == objective


def _check_markdown_adds_up(markdown: str, cost: Cost) -> None:
    rows = [r for r in markdown.splitlines() if r.startswith("| ")]
    amount = {r.split("|")[1].strip(): _figures(r.split("|")[-2])[0] for r in rows if "**" in r}
    items = [
        r for r in rows if "**" not in r and r.split("|")[1].strip().split(":")[0] in MONEY_LABELS
    ]
    assert sum(_figures(r.split("|")[-2])[0] for r in items) == amount["**TCO**"] == cost.tco
    rules = [r for r in rows if r.startswith("| `")]
    assert len(rules) == len(cost.breakdown.penalty_items)
    if rules:
        penalties = sum(_figures(r.split("|")[-2])[0] for r in rules)
        assert penalties == amount["**penalties**"] == cost.penalties
        objective = amount["**objective = TCO + penalties**"]
        assert amount["**TCO**"] + penalties == objective


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_figure_adds_up_as_printed(path: Path) -> None:
    code, out = plan_json(path)  # the examples' plans the other example tests read too
    assert code == 0, out
    plan = Plan.model_validate_json(out)
    assert plan.cost is not None
    _check_cost_adds_up(plan.cost)
    if plan.objective == "min-tco":
        # The itemised figures are the optimiser's own: its objective is TCO + penalties.
        assert plan.solver.objective_value == plan.cost.objective_value
    _check_text_adds_up(render_plan(plan, "text"), plan.cost)
    _check_markdown_adds_up(render_plan(plan, "markdown"), plan.cost)
    assert "breakdown" in render_plan(plan, "yaml")


CASES = [
    ("chat-day-lora-night.yaml", "min-tco", "h100-sxm", ()),
    ("chat-day-lora-night.yaml", "min-tco", "yancheng-coastal-12kw", ()),
    ("chat-day-lora-night.yaml", "max-throughput", "h100-sxm", ("--capex-max", "3000000")),
    ("startup-tight-capex.yaml", "max-throughput", "a100-80gb-sxm", ()),
    ("startup-tight-capex.yaml", "max-throughput", "cloud-8x-h100-beijing", ()),
    ("south-latency-north-batch.yaml", "min-tco", "l40s", ()),
]


def _check_delta(objective: str, base: Plan, other_cost: Cost, compared: Any, other: Any) -> None:
    assert base.cost is not None
    assert compared.tco == other_cost.tco - base.cost.tco
    assert compared.penalties == other_cost.penalties - base.cost.penalties
    assert compared.objective_value == other_cost.objective_value - base.cost.objective_value

    def tokens(deployments: Any, workload: str) -> int:
        # A service split between an owned base and a rented burst delivers both parts.
        return sum(round(d.throughput) for d in deployments if d.workload == workload)

    for t in compared.throughput:
        assert t.delta == tokens(other, t.workload) - tokens(base.deployments, t.workload)
        assert t.unit.endswith("tokens/s")
    # The words carry the sign; the numbers printed are the absolute deltas.
    words = WORDED.findall(compared.summary)
    assert words and all(not n.startswith("-") for _, n in words)
    printed = sorted(_figures(" ".join(n for _, n in words)))
    expected = [compared.tco, compared.penalties]
    if objective == "max-throughput":
        expected += [t.delta for t in compared.throughput]
    else:
        expected.append(compared.objective_value)
    assert printed == sorted(abs(int(v)) for v in expected if v)


@pytest.mark.parametrize(("name", "objective", "item", "extra"), CASES)
def test_deltas_are_differences_of_itemised_plans(
    name: str, objective: str, item: str, extra: tuple[str, ...], tmp_path: Path
) -> None:
    path = str(_global_market(name, tmp_path))
    data = _run(path, "--objective", objective, "--top-k", "3", "--why-not", item, *extra)
    plan = Plan.model_validate(data)
    assert plan.cost is not None and plan.alternatives and plan.why_not_plans
    for alt in plan.alternatives:
        assert alt.cost is not None and alt.compared is not None
        _check_cost_adds_up(alt.cost)
        assert (alt.tco, alt.penalties) == (alt.cost.tco, alt.cost.penalties)
        assert alt.delta == alt.compared.objective_value
        _check_delta(objective, plan, alt.cost, alt.compared, alt.deployments)
    for forced in plan.why_not_plans:
        _check_cost_adds_up(forced.cost)
        _check_delta(objective, plan, forced.cost, forced.compared, forced.deployments)
        assert any(forced.compared.summary in line for line in plan.why_not[forced.workload])
    for fmt in ("text", "markdown"):
        out = render_plan(plan, fmt)
        assert "+-" not in out and "by -" not in out
        assert all(not n.startswith("-") for _, n in WORDED.findall(out))


def test_min_tco_top_k_never_looks_cheaper_than_the_plan() -> None:
    """The defect: '#1: TCO 3,405,724 (+62,488)' under an optimum of 3,443,236. The
    objective (TCO + penalties) of every alternative is at least the plan's."""
    data = _run(str(ROOT / "examples" / "chat-day-lora-night.yaml"), "--top-k", "3")
    plan = Plan.model_validate(data)
    assert plan.cost is not None
    for alt in plan.alternatives:
        assert alt.cost is not None and alt.cost.objective_value >= plan.cost.objective_value
        assert alt.delta >= 0


def test_rule_charges_sum_to_the_penalties_the_optimiser_sees(tmp_path: Path) -> None:
    """Each option's per-rule charges (and its placement's, per site) add up to the IR's
    penalty, so the itemised penalties are the optimiser's; weights reach the instance."""
    from tests.factories.files import write_reqs
    from tests.support.shipped import example

    from gpusolve.candidates.generate import build_candidates
    from gpusolve.plan.inputs import prepare_run

    data = example("chat-day-lora-night.yaml")
    data["workloads"][0]["throughput_weight"] = 2.5
    # Every region: within 苏北 alone no allowed site meets H40's south, so it charges none.
    data.pop("regions")
    run = prepare_run(write_reqs(tmp_path, data), [], [])
    cand = build_candidates(run.reqs, run.catalog, run.policies)
    charged = 0
    for o in cand.instance.owned:
        meta = cand.meta[o.key]
        assert sum(c.amount for c in meta.charges) == o.penalty
        for p in o.placements:
            site = meta.site_charges.get(p.site, ())
            assert sum(c.amount for c in site) == p.penalty
            charged += len(site)
    for c in cand.instance.cloud:
        assert sum(x.amount for x in cand.meta[c.key].charges) == c.penalty
    assert charged  # the shipped site rules charge some placements of this example
    first = data["workloads"][0]["name"]
    assert cand.instance.throughput_weights[first] == 2.5
