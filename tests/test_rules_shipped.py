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
    # H27's 13B class starts where FP16 weights overflow a 24 GB card: an 8B model is not in it.
    ("h27-inference-13b-32gb", W("inference", 13), W("inference", 8)),
    ("h29-mixed-schedule-headroom", day_night, W(schedule="day")),
    ("h30-rule-of-thumb-memory", W("lora"), W("pretrain")),
    ("h41-inference-small-no-80gb", W("inference", 7), W("inference", 8)),
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
    ("h41-long-training-site", W(deadline_hours=400), W("inference")),
    ("h40-latency-sensitive-south", W("inference", latency_sensitive=True), W("inference")),
    ("h40-latency-sensitive-south", W(latency_sensitive=True), W()),
    ("h40-batch-training-north", W(), W("inference")),
    ("h42-one-off-job-rent-cloud", W(runs=1), W(runs=2)),
    ("h42-steady-training-buy", W(runs=36), W("inference")),
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
    assert money == 0  # shipped preferences charge a share of the option's cost, no money
    batch = run(W())
    assert "h40-batch-training-north" in batch.penalty("offer", south)[1]
    assert "h40-batch-training-north" not in batch.penalty("offer", north_unlicensed)[1]
    assert "h37-on-site-operations" in batch.penalty("offer", north_unlicensed)[1]


def test_h41_long_training_requires_ops_and_dual_power() -> None:
    c = card()
    cache = ActivationCache({c.id: c})
    wr = run(W(deadline_hours=400))
    good, bad = colo_offer("good"), colo_offer("bad", ops_24h=False)

    def failed(offer: Any, hours: float) -> list[str]:
        facts = cache.deployment(
            layout(time_to_train_h=hours), card=c, server=server(), offer=offer
        )
        return [v.rule for v in wr.check("deployment", facts)]

    assert failed(good, 200) == []
    assert failed(bad, 200) == ["h41-long-training-site"]  # a run of 200 h: long
    assert failed(bad, 160) == []  # a run of 160 h is not, whatever the deadline allows


def test_h20_h16_server_preferences() -> None:
    c = card()
    cache = ActivationCache({c.id: c})
    wr = run(W())
    assert wr.penalty("server", cache.server(server("ok"))) == (0.0, [])
    slow = server("slow", cpu={"base_ghz": 2.0}, storage_write_gbs=0.2)
    money, rules = wr.penalty("server", cache.server(slow))
    assert rules == ["h20-host-platform-floor", "h16-checkpoint-storage"]
    assert money == 0


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
    owned = cache.deployment(layout(time_to_train_h=40), card=c, server=server())
    rented = cache.deployment(layout(time_to_train_h=40), card=c, cloud=cloud_offer())
    assert "h42-one-off-job-rent-cloud" in one_off.penalty("deployment", owned)[1]
    assert "h42-one-off-job-rent-cloud" not in one_off.penalty("deployment", rented)[1]
    # 36 runs of 400 h keep the hardware busy 14,400 h of the 36-month horizon's 26,280:
    # steady. 36 runs of 7.8 h (a monthly fine-tune) are 1% use: renting them misses nothing.
    steady = run(W(runs=36))
    busy = cache.deployment(layout(time_to_train_h=400), card=c, cloud=cloud_offer())
    occasional = cache.deployment(layout(time_to_train_h=7.8), card=c, cloud=cloud_offer())
    assert "h42-steady-training-buy" in steady.penalty("deployment", busy)[1]
    assert "h42-steady-training-buy" not in steady.penalty("deployment", occasional)[1]


def test_advice_interpolates_values() -> None:
    wr = run(W(params_b=7))
    text = " ".join(wr.advice)
    # 18 B/param by default: 16-bit weights, an fp32 gradient buffer, fp32 Adam states.
    assert "7B model take about 126 GB" in text
    assert "at least 126 GB for model states" in text


# Every shipped soft rule (rule, kind it judges): a workload it fires for, a candidate that
# misses the preference, and a near miss that meets it (the threshold's other side).
C80, C24, C32, C48 = card(), card("c24", 24), card("c32", 32), card("c48", 48)
C64, C120 = card("c64", 64), card("c120", 120)
SLOW_FP32, FAST_FP32 = card("fp32-39", tflops={"fp32": 39.9}), card("fp32-40", tflops={"fp32": 40})
AIR, ENHANCED = colo_offer("air", cooling="air"), colo_offer("enh", cooling="enhanced_air")
SOUTH, NORTH = colo_offer("south"), colo_offer("north", region="苏北", city="Xuzhou")
Subject = tuple[str, dict[str, Any]]  # "card", "server", "cloud", "offer" or a layout's parts


def _facts(cache: ActivationCache, subject: Any) -> Any:
    kind, item = subject
    if kind == "deployment":
        return cache.deployment(layout(**item.get("layout", {})), **item.get("parts", {}))
    return getattr(cache, kind)(item)


def dep(parts: dict[str, Any] | None = None, **kw: Any) -> Subject:
    return ("deployment", {"layout": kw, "parts": parts or {"card": C80, "server": server()}})


HGX_AT = {"card": C80, "server": server()}
PREFER_CASES: list[tuple[str, str, Workload, Subject, Subject]] = [
    (
        "h37-on-site-operations",
        "offer",
        W(),
        ("offer", colo_offer("no-ops", ops_24h=False)),
        ("offer", colo_offer("ops", ops_24h=True)),
    ),
    (
        "h18-dense-servers-need-enhanced-cooling",
        "deployment",
        W(),
        dep({**HGX_AT, "offer": AIR}),
        dep({**HGX_AT, "offer": ENHANCED}),
    ),
    # H17's week-long run is the layout's own run time, not the deadline that allows it.
    (
        "h17-long-runs-need-cooling",
        "deployment",
        W(deadline_hours=400),
        dep({**HGX_AT, "offer": AIR}, time_to_train_h=170),
        dep({**HGX_AT, "offer": AIR}, time_to_train_h=160),
    ),
    (
        "h19-licensed-provider",
        "offer",
        W(),
        ("offer", colo_offer("isp", licences=["ISP"])),
        ("offer", colo_offer("idc", licences=["IDC"])),
    ),
    ("h27-inference-13b-32gb", "card", W("inference", 13), ("card", C24), ("card", C32)),
    ("h41-inference-small-no-80gb", "card", W("inference", 7), ("card", C80), ("card", C48)),
    (
        "h13-long-sequence-finetune",
        "card",
        W("lora", seq_len=8192),
        ("card", card("c40", 40)),
        ("card", C48),
    ),
    (
        "h13-small-model-throughput",
        "card",
        W(params_b=0.3),
        ("card", SLOW_FP32),
        ("card", FAST_FP32),
    ),
    ("h21-one-node-first", "deployment", W("lora"), dep(multi_node=True), dep(multi_node=False)),
    ("h41-pretrain-10b-multi-node", "card", W("pretrain", 13), ("card", C80), ("card", C120)),
    ("h13-large-dense-training", "card", W("pretrain", 7), ("card", C64), ("card", C80)),
    (
        "h20-host-platform-floor",
        "server",
        W(),
        ("server", server("ghz24", cpu={"base_ghz": 2.4})),
        ("server", server("ghz25", cpu={"base_ghz": 2.5})),
    ),
    (
        "h16-checkpoint-storage",
        "server",
        W(),
        ("server", server("disk09", storage_write_gbs=0.9)),
        ("server", server("disk10", storage_write_gbs=1.0)),
    ),
    (
        "h16-checkpoint-storage",
        "cloud",
        W(),
        ("cloud", cloud_offer("cdisk09", storage_write_gbs=0.9)),
        ("cloud", cloud_offer("cdisk10", storage_write_gbs=1.0)),
    ),
    (
        "h16-checkpoint-storage",
        "deployment",
        W(),
        dep(checkpoint_stall_fraction=0.06),
        dep(checkpoint_stall_fraction=0.05),
    ),
    (
        "h40-latency-sensitive-south",
        "offer",
        W("inference", latency_sensitive=True),
        ("offer", NORTH),
        ("offer", SOUTH),
    ),
    ("h40-batch-training-north", "offer", W(), ("offer", SOUTH), ("offer", NORTH)),
    # Half of a 36-month horizon is 13,140 h: one run of 13,000 h is still one-off demand.
    (
        "h42-one-off-job-rent-cloud",
        "deployment",
        W(runs=1),
        dep(time_to_train_h=13_000),
        dep(time_to_train_h=13_200),
    ),
    (
        "h42-steady-training-buy",
        "deployment",
        W(runs=36),
        dep({"card": C80, "cloud": cloud_offer()}, time_to_train_h=366),
        dep({"card": C80, "cloud": cloud_offer()}, time_to_train_h=364),
    ),
]


@pytest.mark.parametrize(
    ("rule", "kind", "w", "misses", "meets"),
    PREFER_CASES,
    ids=[f"{c[0]}:{c[1]}" for c in PREFER_CASES],
)
def test_soft_rule_charges_its_case_not_the_near_miss(
    rule: str, kind: str, w: Workload, misses: Subject, meets: Subject
) -> None:
    cards = {c.id: c for c in (C80, C24, C32, C48, C64, C120, SLOW_FP32, FAST_FP32)}
    cache = ActivationCache(cards)
    wr = run(w)
    assert rule in wr.penalty(kind, _facts(cache, misses))[1]
    assert rule not in wr.penalty(kind, _facts(cache, meets))[1]


def test_every_shipped_soft_rule_has_a_near_miss_case() -> None:
    shipped_prefers = {
        (rule.rule.id, kind) for rule in shipped().rules for kind in rule.rule.prefer
    }
    assert shipped_prefers == {(c[0], c[1]) for c in PREFER_CASES}


def test_shipped_soft_rules_charge_a_share_never_money() -> None:
    """A shipped preference never outweighs the money: a share of the option's cost."""
    for rule in shipped().rules:
        for kind, pref in rule.rule.prefer.items():
            assert pref.penalty is None and pref.share is not None, (rule.rule.id, kind)
            assert 0 < pref.share <= 0.10, (rule.rule.id, kind)


def test_h16_sizes_a_lora_checkpoint_by_its_adapters_not_the_base() -> None:
    # 72B LoRA: adapters at most 1% of the base (H14), 12 B each: 72 x 0.01 x 12 = 8.64 GB,
    # not 72 x 14 = 1,008 GB. A full fine-tune keeps the 14 B/param figure.
    lora = " ".join(run(W("lora", params_b=72)).advice)
    assert "8.64 GB" in lora and "1008" not in lora.replace(",", "")
    assert "adapters" in lora
    full = " ".join(run(W("full_finetune", params_b=72)).advice)
    assert "1008 GB" in full.replace(",", "")
