"""Loading, merging, precedence and the trace; check() and penalty() on candidates."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.factories.catalog import card, cloud_offer, colo_offer, server
from tests.factories.files import write_file
from tests.factories.requirements import layout, requirements, workload

from gpusolve.errors import InputError
from gpusolve.models.rules_report import TraceEntryOut
from gpusolve.render.rules import _entry_lines
from gpusolve.rules import (
    ActivationCache,
    deployment_facts,
    evaluate_workload,
    load_ruleset,
)

EXAMPLE = """\
rules:
  - id: full-ft-13b-prefers-80gb
    source: H41
    title: Full fine-tune of 13B or more — 80 GB cards first
    when: workload.kind == "full_finetune" && workload.model.params_b >= 13.0
    require:
      card: card.memory_gb >= 80.0
"""


def only(tmp_path: Path, text: str, name: str = "r.yaml"):
    return load_ruleset([write_file(tmp_path, text, name)], shipped=False)


def test_require_filters_cards_and_trace_names_rule(tmp_path: Path) -> None:
    rs = only(tmp_path, EXAMPLE)
    cache = ActivationCache({})
    big, small = card("c80", 80), card("c48", 48)
    w13 = workload("w13", params_b=13)
    w7 = workload("w7", params_b=7)
    wr13 = evaluate_workload(rs, w13, requirements(w13))
    assert wr13.check("card", cache.card(big)) == []
    [violation] = wr13.check("card", cache.card(small))
    assert (violation.rule, violation.source) == ("full-ft-13b-prefers-80gb", "H41")
    assert [t.rule for t in wr13.trace] == ["full-ft-13b-prefers-80gb"]
    assert wr13.trace[0].source == "H41"
    wr7 = evaluate_workload(rs, w7, requirements(w7))
    assert wr7.check("card", cache.card(small)) == []
    assert wr7.trace == []


def test_later_set_overrides_earlier_and_trace_says_so(tmp_path: Path) -> None:
    first = write_file(
        tmp_path,
        "rules:\n  - {id: a, source: H29, title: first, set: {headroom: 0.25}}\n",
        "1.yaml",
    )
    second = write_file(
        tmp_path,
        "rules:\n  - {id: b, source: H29, title: second, when: workload.training,"
        " set: {headroom: 0.3}}\n",
        "2.yaml",
    )
    rs = load_ruleset([first, second], shipped=False)
    w = workload()
    wr = evaluate_workload(rs, w, requirements(w))
    assert wr.params.headroom == 0.3
    a, b = wr.trace
    assert a.overridden_by == {"headroom": "b"}
    assert b.previous == {"headroom": (0.25, "a")}
    assert wr.param_origin["headroom"] == "b"
    # What `rules explain` prints of the entry (the trace's output model, rendered).
    shown = _entry_lines(TraceEntryOut.model_validate(a.to_dict()))
    assert "overridden later by b" in shown[0]


def test_user_headroom_wins_over_rules_and_is_traced(tmp_path: Path) -> None:
    rs = only(tmp_path, "rules:\n  - {id: a, source: H29, title: first, set: {headroom: 0.25}}\n")
    w = workload()
    wr = evaluate_workload(rs, w, requirements(w, headroom=0.1))
    assert wr.params.headroom == 0.1
    assert wr.param_origin["headroom"] == "user"
    assert wr.trace[-1].rule == "user"
    assert wr.trace[0].overridden_by == {"headroom": "user"}
    assert wr.fired == ["a"]


def test_when_reads_final_params(tmp_path: Path) -> None:
    # The threshold is set by a later (user) rule; the earlier rule must see it.
    text = """\
rules:
  - id: long
    source: H17
    title: long runs
    when: workload.deadline_hours != null && workload.deadline_hours >= params.long_training_hours
    advise: long run (threshold {params.long_training_hours} h)
  - id: shorter-threshold
    source: H41
    title: our long training starts at 100 h
    set: {long_training_hours: 100}
"""
    rs = only(tmp_path, text)
    w = workload(deadline_hours=120)
    wr = evaluate_workload(rs, w, requirements(w))
    assert wr.fired == ["long", "shorter-threshold"]
    assert wr.advice == ["long run (threshold 100 h)"]


def test_rules_that_never_settle_are_an_input_error(tmp_path: Path) -> None:
    text = """\
rules:
  - id: flip
    source: H12
    title: flip
    when: params.mfu_floor < 0.45
    set: {mfu_floor: 0.5}
"""
    rs = only(tmp_path, text)
    w = workload()
    with pytest.raises(InputError, match="never settle"):
        evaluate_workload(rs, w, requirements(w))


def test_disable_and_override(tmp_path: Path) -> None:
    base = write_file(
        tmp_path,
        "rules:\n"
        "  - {id: a, source: H29, title: first rule, set: {headroom: 0.25}}\n"
        "  - {id: b, source: H12, title: second rule, set: {mfu_floor: 0.25}}\n"
        "  - {id: c, source: H11, title: third rule, set: {comm_threshold: 0.2}}\n",
        "1.yaml",
    )
    user = write_file(
        tmp_path,
        "disable: [c]\n"
        "rules:\n"
        "  - {id: a, source: H29, title: replaced, override: true, set: {headroom: 0.3}}\n",
        "2.yaml",
    )
    rs = load_ruleset([base, user], shipped=False)
    assert rs.ids() == ["a", "b"]  # the replacement keeps its place
    assert rs.get("a").title == "replaced"
    assert rs.get("a").replaced == [f"{base}:2"]
    assert "c" in rs.disabled
    w = workload()
    wr = evaluate_workload(rs, w, requirements(w))
    assert [t.rule for t in wr.trace] == ["a", "b"]
    assert wr.params.headroom == 0.3
    assert wr.params.comm_threshold == 0.15


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "rules:\n  - {id: a, source: H29, title: dup, set: {headroom: 0.3}}\n",
            "duplicate rule id 'a'",
        ),
        (
            "rules:\n  - {id: zz, source: H29, title: xxx, override: true, set: {headroom: 0.3}}\n",
            "override: true but no earlier rule",
        ),
        ("disable: [nope]\nrules: []\n", "no earlier rule has id 'nope'"),
        (
            "rules:\n  - {id: b, source: H29, title: xxx, set: {headroom: 0.3}}\n"
            "  - {id: b, source: H29, title: yyy, set: {headroom: 0.3}}\n",
            "used twice",
        ),
    ],
)
def test_merge_errors(tmp_path: Path, text: str, needle: str) -> None:
    base = write_file(
        tmp_path, "rules:\n  - {id: a, source: H29, title: first, advise: hi}\n", "1.yaml"
    )
    user = write_file(tmp_path, text, "2.yaml")
    with pytest.raises(InputError) as info:
        load_ruleset([base, user], shipped=False)
    assert needle in str(info.value)
    assert f"{user}:" in str(info.value)


def test_penalty_and_deployment_checks(tmp_path: Path) -> None:
    text = """\
rules:
  - id: lic
    source: H19
    title: licensed
    prefer:
      offer: {expr: '"IDC" in offer.licences', penalty: 1000}
  - id: power
    source: H35
    title: power
    require:
      deployment: server == null || offer == null || offer.rack_kw >= server.power_kw
  - id: one-node
    source: H21
    title: one node
    prefer:
      deployment: {expr: "!deployment.multi_node", penalty: 500}
"""
    rs = only(tmp_path, text)
    w = workload()
    wr = evaluate_workload(rs, w, requirements(w))
    c, s = card(), server(power_kw=10.2)
    cache = ActivationCache({c.id: c})
    assert wr.penalty("offer", cache.offer(colo_offer(licences=[]))) == (1000.0, ["lic"])
    assert wr.penalty("offer", cache.offer(colo_offer("o2", licences=["IDC"]))) == (0.0, [])
    weak = colo_offer("weak", rack_kw=8)
    facts = cache.deployment(layout(), card=c, server=s, offer=weak)
    assert [v.rule for v in wr.check("deployment", facts)] == ["power"]
    assert wr.check("deployment", cache.deployment(layout(), card=c, server=s)) == []
    # site=False: only rules that do not read the offer; site=True: only those that do.
    assert wr.check("deployment", facts, site=False) == []
    assert [v.rule for v in wr.check("deployment", facts, site=True)] == ["power"]
    multi = deployment_facts(layout(nodes=2, gpus=16), card=c, cloud=cloud_offer())
    assert wr.penalty("deployment", multi) == (500.0, ["one-node"])
    assert wr.check("deployment", multi) == []


def test_require_evaluation_error_fails_closed(tmp_path: Path) -> None:
    text = """\
rules:
  - id: odd
    source: H05
    title: odd
    require:
      card: card.memory_gb / (card.tdp_w - 700) > 0
"""
    rs = only(tmp_path, text)
    w = workload()
    wr = evaluate_workload(rs, w, requirements(w))
    [v] = wr.check("card", ActivationCache({}).card(card(tdp_w=700)))
    assert v.rule == "odd"
    assert "division by zero" in (v.detail or "")


def test_model_size_from_architecture_or_caller(tmp_path: Path) -> None:
    rs = only(tmp_path, EXAMPLE)
    w = workload(params_b=1, model={"params_b": None, "layers": 48, "hidden": 5120})
    wr = evaluate_workload(rs, w, requirements(w))
    assert wr.fired == ["full-ft-13b-prefers-80gb"]  # 12·48·5120² + embeddings ≈ 15B
    wr = evaluate_workload(rs, w, requirements(w), model_sizes={"w": 6.7})
    assert wr.fired == []
