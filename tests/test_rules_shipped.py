"""The shipped rule set: every rule fires for one workload and not for another, and the
effects do what the heuristic says."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from tests.factories.catalog import card, cloud_offer, colo_offer, server
from tests.factories.requirements import layout, requirements, workload

from gpusolve.load import load_catalog
from gpusolve.load.data import data_dir
from gpusolve.models.catalog import Catalog
from gpusolve.models.requirements import Requirements, Workload
from gpusolve.rules import (
    ActivationCache,
    RuleSet,
    WorkloadRules,
    catalogue_removals,
    evaluate_workload,
    load_ruleset,
)


@cache
def shipped() -> RuleSet:
    return load_ruleset()


@cache
def catalog() -> Catalog:
    return load_catalog().catalog


def run(w: Workload, reqs: Requirements | None = None) -> WorkloadRules:
    return evaluate_workload(shipped(), w, reqs or requirements(w))


def W(kind: str = "full_finetune", params_b: float = 7.0, **kw: Any) -> Workload:
    return workload("w", kind, params_b, **kw)


def day_night() -> tuple[Workload, Requirements]:
    day = workload("chat", "inference", 13, schedule="day")
    night = workload("tune", "lora", 7, schedule="night")
    return day, requirements(day, night)


# (rule, workload that fires it, workload that does not) — requirements built around them
CASES: list[tuple[str, Any, Any]] = [
    ("h05-model-state-bytes", W(), W("lora")),
    (
        "h10-full-recompute-advice",
        W(gradient_checkpointing="full"),
        W(gradient_checkpointing="none"),
    ),
    ("h14-full-finetune-exceeds-one-card", W(params_b=7), W(params_b=3)),
    ("h27-inference-13b-32gb", W("inference", 13), W("inference", 7)),
    ("h29-mixed-schedule-headroom", day_night, W(schedule="day")),
    ("h30-rule-of-thumb-memory", W("lora"), W("pretrain")),
    ("h41-inference-small-no-80gb", W("inference", 7), W("inference", 13)),
    ("h41-full-finetune-13b-80gb", W(params_b=13), W(params_b=7)),
    ("h13-long-sequence-finetune", W("lora", seq_len=8192), W("lora", seq_len=4096)),
    (
        "h12-measured-mfu-too-low",
        W(measured={"card": "h100-sxm", "gpus": 8, "mfu": 0.2}),
        W(measured={"card": "h100-sxm", "gpus": 8, "mfu": 0.45}),
    ),
    (
        "h12-measured-mfu-too-high",
        W(measured={"card": "h100-sxm", "gpus": 8, "mfu": 0.7}),
        W(measured={"card": "h100-sxm", "gpus": 8, "mfu": 0.45}),
    ),
    ("h13-small-model-throughput", W(params_b=0.3), W(params_b=7)),
    ("h13-large-dense-training", W("pretrain", 7), W("pretrain", 1.3)),
    ("h13-huge-parallel-moe", W("pretrain", 400, model={"experts": 8}), W("pretrain", 400)),
    ("h15-budget-gradient-accumulation", (W(), {"budget": {"capex_max": 5e6}}), W()),
    ("h21-one-node-first", W("pretrain", 7), W("pretrain", 13)),
    ("h21-one-node-first", W("lora"), W("inference", 13)),
    ("h33-zero-stage-choice", W(), W(sharding="zero3")),
    ("h34-tensor-parallel-needs-nvlink", W(), W("inference")),
    ("h36-multi-node-fabric-and-bgp", W("pretrain", 70), W("inference", 70)),
    ("h41-pretrain-10b-multi-node", W("pretrain", 13), W("pretrain", 7)),
    ("h20-host-platform-floor", W(), W("inference")),
    ("h16-checkpoint-storage", W(), W("inference")),
    ("h37-on-site-operations", W(), W("inference")),
    ("h17-long-runs-need-cooling", W(deadline_hours=200), W(deadline_hours=48)),
    ("h41-long-training-site", W(deadline_hours=400), W(deadline_hours=100)),
    ("h40-latency-sensitive-south", W("inference", latency_sensitive=True), W("inference")),
    ("h40-batch-training-north", W(), W("inference")),
    ("h42-one-off-job-rent-cloud", W(runs=1, deadline_hours=48), W(runs=12, deadline_hours=48)),
    ("h42-steady-training-buy", W(runs=36), W(runs=1)),
]
# Physical and site-quality rules that hold for every workload: tested per candidate below.
ALWAYS = {
    "h35-rack-power-covers-server",
    "h37-cooling-matches-server",
    "h18-dense-servers-need-enhanced-cooling",
    "h19-licensed-provider",
}


def fired(case: Any) -> list[str]:
    if callable(case):
        w, reqs = case()
        return run(w, reqs).fired
    if isinstance(case, tuple):
        w, extra = case
        return run(w, requirements(w, **extra)).fired
    return run(case).fired


@pytest.mark.parametrize(("rule", "fires", "silent"), CASES, ids=[c[0] for c in CASES])
def test_rule_fires_and_does_not(rule: str, fires: Any, silent: Any) -> None:
    assert rule in fired(fires)
    assert rule not in fired(silent)


def test_every_shipped_rule_is_tested_and_cited() -> None:
    ids = set(shipped().ids())
    assert ids == {c[0] for c in CASES} | ALWAYS
    assert not {c[0] for c in CASES} & ALWAYS
    for rule in shipped().rules:
        assert rule.rule.title and rule.source.startswith("H")


REQUIRED_SOURCES = [
    "H05",
    "H10",
    "H12",
    "H13",
    "H14",
    "H15",
    "H16",
    "H17",
    "H18",
    "H19",
    "H20",
    "H21",
    "H27",
    "H29",
    "H30",
    "H33",
    "H34",
    "H35",
    "H36",
    "H37",
    "H40",
    "H41",
    "H42",
]


def test_required_heuristics_are_encoded() -> None:
    sources = {r.source for r in shipped().rules}
    assert set(REQUIRED_SOURCES) <= sources
    h13 = [r.id for r in shipped().rules if r.source == "H13"]
    h41 = [r.id for r in shipped().rules if r.source == "H41"]
    assert len(h13) == 4 and len(h41) == 4


def test_rule_files_start_with_schema_comment() -> None:
    files = sorted(p for p in data_dir("rules").glob("*.yaml") if p.name != "heuristics.yaml")
    assert len(files) >= 4
    for path in files:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=../schemas/rules.schema.json"


# --------------------------------------------------------------------------- effects


def removed(w: Workload, rule: str, kind: str) -> list[str]:
    wr = run(w)
    return [
        i
        for r in catalogue_removals(wr, catalog())
        if r.rule == rule and r.kind == kind
        for i in r.removed
    ]


def test_h41_full_finetune_13b_removes_small_cards_only() -> None:
    gone = removed(W(params_b=13), "h41-full-finetune-13b-80gb", "card")
    small = {c.id for c in catalog().cards.values() if c.memory_gb < 80}
    assert set(gone) == small and small


def test_h13_large_dense_needs_nvswitch_servers() -> None:
    gone = removed(W("pretrain", 70), "h13-large-dense-training", "server")
    for sid in gone:
        assert catalog().servers[sid].topology not in ("nvswitch", "full_mesh")
    kept = set(catalog().servers) - set(gone)
    assert all(catalog().servers[s].topology in ("nvswitch", "full_mesh") for s in kept)


def test_h29_sets_headroom_and_user_headroom_wins() -> None:
    day, reqs = day_night()
    assert run(day, reqs).params.headroom == 0.25
    reqs2 = reqs.model_copy(update={"headroom": 0.15})
    wr = run(day, reqs2)
    assert wr.params.headroom == 0.15
    assert wr.param_origin["headroom"] == "user"


def test_h19_h40_h37_offer_penalties() -> None:
    cache = ActivationCache({})
    south = cache.offer(colo_offer("south"))
    north_unlicensed = cache.offer(
        colo_offer("north", region="苏北", city="Xuzhou", licences=[], ops_24h=False)
    )
    chat = run(W("inference", 13, latency_sensitive=True))
    assert chat.penalty("offer", south) == (0.0, [])
    money, rules = chat.penalty("offer", north_unlicensed)
    assert rules == ["h19-licensed-provider", "h40-latency-sensitive-south"]
    assert money == 300_000
    batch = run(W())
    assert "h40-batch-training-north" in batch.penalty("offer", south)[1]
    assert "h40-batch-training-north" not in batch.penalty("offer", north_unlicensed)[1]
    assert "h37-on-site-operations" in batch.penalty("offer", north_unlicensed)[1]


def test_h41_long_training_requires_ops_and_dual_power() -> None:
    cache = ActivationCache({})
    wr = run(W(deadline_hours=400))
    assert wr.check("offer", cache.offer(colo_offer("good"))) == []
    bad = cache.offer(colo_offer("bad", ops_24h=False))
    assert [v.rule for v in wr.check("offer", bad)] == ["h41-long-training-site"]


def test_h20_h16_server_preferences() -> None:
    c = card()
    cache = ActivationCache({c.id: c})
    wr = run(W())
    assert wr.penalty("server", cache.server(server("ok"))) == (0.0, [])
    slow = server("slow", cpu={"base_ghz": 2.0}, storage_write_gbs=0.2)
    money, rules = wr.penalty("server", cache.server(slow))
    assert rules == ["h20-host-platform-floor", "h16-checkpoint-storage"]
    assert money == 100_000


def test_deployment_rules_h34_h35_h36_h37_h18() -> None:
    c, pcie = card(), card("pcie48", 48, form_factor="pcie", peer_link="pcie")
    cache = ActivationCache({c.id: c, pcie.id: pcie})
    wr = run(W("pretrain", 70))
    hgx = server("hgx", power_kw=10.2)
    box = server("box", card_id="pcie48", topology="pcie", peer_bandwidth_gbs=64)
    good_site = colo_offer("ib")
    air_eth = colo_offer("air", cooling="air", rack_kw=8, fabric="ethernet", bgp=False)

    def failures(s: Any, o: Any, **kw: Any) -> list[str]:
        card_ = c if s is hgx else pcie
        facts = cache.deployment(layout(**kw), card=card_, server=s, offer=o)
        return [v.rule for v in wr.check("deployment", facts)]

    assert failures(hgx, good_site, nodes=2, gpus=16, tp=8) == []
    assert failures(box, good_site, tp=8) == ["h34-tensor-parallel-needs-nvlink"]
    assert failures(box, good_site, tp=1) == []
    assert failures(hgx, air_eth, nodes=2, gpus=16) == [
        "h35-rack-power-covers-server",
        "h36-multi-node-fabric-and-bgp",
    ]
    liquid_only = server("wet", cooling=["liquid"])
    assert "h37-cooling-matches-server" in failures(liquid_only, air_eth)
    _, rules = wr.penalty(
        "deployment", cache.deployment(layout(), card=c, server=hgx, offer=air_eth)
    )
    assert "h18-dense-servers-need-enhanced-cooling" in rules
    cloud_eth = cache.deployment(
        layout(nodes=2, gpus=16), card=c, cloud=cloud_offer("eth", fabric="ethernet")
    )
    assert [v.rule for v in wr.check("deployment", cloud_eth)] == ["h36-multi-node-fabric-and-bgp"]


def test_h42_mode_preferences() -> None:
    c = card()
    cache = ActivationCache({c.id: c})
    one_off = run(W(runs=1, deadline_hours=48))
    owned = cache.deployment(layout(), card=c, server=server())
    rented = cache.deployment(layout(), card=c, cloud=cloud_offer())
    assert "h42-one-off-job-rent-cloud" in one_off.penalty("deployment", owned)[1]
    assert "h42-one-off-job-rent-cloud" not in one_off.penalty("deployment", rented)[1]
    steady = run(W(runs=36))
    assert "h42-steady-training-buy" in steady.penalty("deployment", rented)[1]


def test_advice_interpolates_values() -> None:
    wr = run(W(params_b=7))
    text = " ".join(wr.advice)
    # 18 B/param by default: 16-bit weights, an fp32 gradient buffer, fp32 Adam states.
    assert "7B model take about 126 GB" in text
    assert "at least 126 GB for model states" in text
