"""The rules stage behind the candidates stage's WorkloadPolicy protocol."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.factories.catalog import card, cloud_offer, colo_offer, server
from tests.factories.files import write_file
from tests.factories.requirements import layout, requirements, workload

from gpusolve.models.catalog import Catalog
from gpusolve.rules import load_ruleset
from gpusolve.rules.policy import RulesPolicy, evaluate_policies, model_sizes

RULES = """\
rules:
  - id: big-cards
    source: H41
    title: big cards for big fine-tunes
    when: workload.model.params_b >= 13
    require:
      card: card.memory_gb >= 80
  - id: power
    source: H35
    title: rack power covers the server
    require:
      deployment: server == null || offer == null || offer.rack_kw >= server.power_kw
  - id: one-node
    source: H21
    title: one node first
    prefer:
      deployment: {expr: "!deployment.multi_node", penalty: 500}
  - id: licensed
    source: H19
    title: licensed sites
    prefer:
      offer: {expr: '"IDC" in offer.licences', penalty: 1000, reason: shutdown risk}
  - id: tip
    source: H05
    title: a tip
    advise: "{workload.model.params_b}B"
"""


def setup(tmp_path: Path) -> tuple[dict[str, Any], Catalog]:
    big, small = card("c80", 80), card("c48", 48)
    catalog = Catalog(
        cards={c.id: c for c in (big, small)},
        servers={"s8": server("s8", "c80")},
        colo_offers={"o1": colo_offer("o1"), "weak": colo_offer("weak", rack_kw=8, licences=[])},
        cloud_offers={"cl": cloud_offer("cl", "c80")},
    )
    a, b = workload("a", params_b=13), workload("b", params_b=13)
    reqs = requirements(a, b, workload("c", params_b=7))
    ruleset = load_ruleset([write_file(tmp_path, RULES)], shipped=False)
    policies, summary = evaluate_policies(reqs, catalog, ruleset=ruleset)
    assert [f.rule for f in summary.fired if f.rule == "big-cards"] == ["big-cards"]
    fired = {f.rule: f.workloads for f in summary.fired}
    assert fired["big-cards"] == ["a", "b"]
    assert "a, b: 13B (H05, tip)" in summary.advice
    assert all(isinstance(p, RulesPolicy) for p in policies.values())
    return policies, catalog


def test_failed_and_penalty_follow_the_candidates_calls(tmp_path: Path) -> None:
    policies, cat = setup(tmp_path)
    a, c = policies["a"], policies["c"]
    small, big, s8 = cat.cards["c48"], cat.cards["c80"], cat.servers["s8"]
    ctx = {"workload": None}
    [hit] = a.failed("card", small, ctx)
    assert (hit.rule, hit.source) == ("big-cards", "H41")
    assert "big-cards" in hit.sentence()
    assert a.failed("card", big, ctx) == [] and c.failed("card", small, ctx) == []
    single = layout()
    multi = layout(nodes=2, gpus=16)
    assert a.failed("deployment", multi, ctx) == []
    assert a.penalty("deployment", multi, ctx).money == 500
    assert a.penalty("deployment", single, ctx).money == 0
    # Per placement: offer rules plus the deployment rules that read the offer, once.
    place = {"workload": None, "deployment": multi, "server": s8}
    assert a.failed("offer", cat.colo_offers["o1"], place) == []
    assert [h.rule for h in a.failed("offer", cat.colo_offers["weak"], place)] == ["power"]
    penalty = a.penalty("offer", cat.colo_offers["weak"], place)
    assert penalty.money == 1000  # licensed only: one-node was charged per layout
    assert [(h.rule, h.detail) for h in penalty.rules] == [("licensed", "shutdown risk")]
    assert a.params.headroom == 0.2


def test_model_sizes_resolve_presets() -> None:
    w = workload("p", "inference", 1, model={"params_b": None, "preset": "llama-2-13b"})
    sizes = model_sizes(requirements(w))
    assert 12.5 < sizes["p"] < 13.5


def test_shipped_rules_through_the_policy(tmp_path: Path) -> None:
    big, small = card("c80", 80), card("c48", 48)
    catalog = Catalog(cards={c.id: c for c in (big, small)})
    w = workload("ft", params_b=13)
    policies, summary = evaluate_policies(requirements(w), catalog, [])
    hits = policies["ft"].failed("card", small, {"workload": w})
    assert [h.rule for h in hits] == ["h41-full-finetune-13b-80gb"]
    assert "h41-full-finetune-13b-80gb" in [f.rule for f in summary.fired]
