"""One set of rules for `plan` and `colo` (issue 24, deliverable 6): `colo` judges each
fleet line at each offer with the placement rules `plan` applies, says which fired, and
ranks by TCO + penalties; rules that depend on the workload are listed as not judged."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from tests.support.shipped import ROOT

from gpusolve.candidates.generate import build_candidates
from gpusolve.candidates.records import Candidates
from gpusolve.colo.compare import rule_hits
from gpusolve.colo.placement import PlacementRules, placement_rules
from gpusolve.load import load_catalog, load_requirements
from gpusolve.models.catalog import Catalog
from gpusolve.models.fleet import Fleet, FleetItem
from gpusolve.rules.loader import load_ruleset
from gpusolve.rules.policy import evaluate_policies

EXAMPLES = ("chat-day-lora-night.yaml", "pretrain-70b-infiniband.yaml")


@cache
def _catalog() -> Catalog:
    return load_catalog(None).catalog


@cache
def _rules() -> PlacementRules:
    return placement_rules(load_ruleset([]), _catalog())


@cache
def _candidates(name: str) -> Candidates:
    """The candidates `plan` builds, in explain mode: placements a require refuses are
    kept, tagged with the rule, so both what plan refuses and what it charges are seen."""
    reqs = load_requirements(ROOT / "examples" / name)
    policies, _ = evaluate_policies(reqs, _catalog())
    return build_candidates(reqs, _catalog(), policies, explain=True)


def _colo_verdict(server: str, nodes: int, multi_node: bool, offer: str) -> tuple[set[str], ...]:
    catalog = _catalog()
    fleet = Fleet(servers=[FleetItem(server=server, count=nodes, multi_node=multi_node)])
    hits = rule_hits(fleet, {server: catalog.servers[server]}, catalog.colo_offers[offer], _rules())
    refused = {h.rule for h in hits if h.effect == "refused"}
    penalised = {h.rule for h in hits if h.effect == "penalty"}
    return refused, penalised


def _spans_servers(name: str, option_key: str) -> bool:
    """Whether plan judged this layout as one job across servers (sizing._needs_fabric)."""
    cand = _candidates(name)
    meta = cand.meta[option_key]
    assert meta.server is not None
    kind = {w.name: w.kind for w in load_requirements(ROOT / "examples" / name).workloads}
    per_node = _catalog().servers[meta.server].gpus
    layout = meta.estimate.layout
    if kind[meta.workload] == "inference":
        return layout.tp * layout.pp > per_node
    return meta.estimate.nodes > 1


def test_colo_and_plan_agree_on_every_placement() -> None:
    judged = set(_rules().judged)
    not_judged = {k.rule for k in _rules().skipped}
    assert "h18-dense-servers-need-enhanced-cooling" in judged
    assert "h37-on-site-operations" in not_judged  # training only: depends on the workload
    compared = penalised = 0
    for name in EXAMPLES:
        cand = _candidates(name)
        for option in cand.instance.owned:
            meta = cand.meta[option.key]
            assert meta.server is not None
            spans = _spans_servers(name, option.key)
            for placement in option.placements:
                charged = {c.rule for c in meta.site_charges.get(placement.site, ())}
                refused = {t[5:] for t in placement.violates if t.startswith("rule:")}
                # What plan applies at a placement and colo does not judge, colo lists.
                assert (charged | refused) - judged <= not_judged
                colo_refused, colo_penalised = _colo_verdict(
                    meta.server, meta.nodes, spans, placement.site
                )
                assert colo_penalised == charged & judged, (option.key, placement.site)
                assert colo_refused == refused & judged, (option.key, placement.site)
                compared += 1
                penalised += bool(colo_penalised)
    assert compared > 20 and penalised > 0


def _colo(gpusolve: Any, fleet: Path, *extra: str) -> dict[str, Any]:
    result = gpusolve("colo", str(fleet), "--format", "json", *extra)
    assert result.code == 0, result.err
    data: dict[str, Any] = json.loads(result.out)
    return data


def test_h20_in_an_air_rack_is_penalised_as_plan_does(gpusolve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump({"servers": [{"server": "hgx-h20-8gpu", "count": 1}]}))
    # An air rack with the power for one H20 board within its continuous-load margin: the
    # placement plan penalises (H18), which colo ranked first before the rules were shared.
    air = tmp_path / "air.yaml"
    air.write_text("currency: CNY\npatch:\n  - id: huaian-6.6kw-air\n    rack_kw: 12\n")
    data = _colo(gpusolve, fleet, "--catalog", str(air))
    feasible = [r for r in data["offers"] if r["feasible"]]
    objectives = [r["objective"] for r in feasible]
    assert objectives == sorted(objectives)
    assert "huaian-6.6kw-air" in {r["offer"] for r in feasible}
    for row in feasible:
        h18 = [h for h in row["rules"] if h["rule"] == "h18-dense-servers-need-enhanced-cooling"]
        offer = _catalog().colo_offers[row["offer"]]
        assert bool(h18) == (offer.cooling == "air"), row["offer"]
        assert row["penalties"] == sum(h["amount"] for h in row["rules"])
        assert row["objective"] == row["tco"] + row["penalties"]
    not_judged = {k["rule"] for k in data["rules_not_judged"]}
    assert "h37-on-site-operations" in not_judged
    text = gpusolve("colo", str(fleet), "--catalog", str(air)).out
    assert "rule h18-dense-servers-need-enhanced-cooling (H18) on hgx-h20-8gpu" in text
    assert "Rules not judged here" in text


def test_a_user_require_rule_refuses_offers_in_colo(gpusolve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rules = tmp_path / "dual.yaml"
    rules.write_text(
        "rules:\n"
        "  - id: my-dual-power\n"
        "    source: H22\n"
        "    title: Our sites need a dual power feed\n"
        '    when: "true"\n'
        "    require:\n"
        "      offer: offer.dual_power\n"
    )
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump({"servers": [{"server": "r760xa-4gpu-l40s", "count": 1}]}))
    data = _colo(gpusolve, fleet, "--rules", str(rules))
    assert "my-dual-power" in data["rules_judged"]
    for row in data["offers"]:
        dual = _catalog().colo_offers[row["offer"]].dual_power
        refused = [h for h in row["rules"] if h["effect"] == "refused"]
        assert bool(refused) == (not dual), row["offer"]
        if not dual:
            assert not row["feasible"]
            assert any("my-dual-power" in r for r in row["reasons"])


def test_rules_a_fleet_cannot_decide_are_listed_with_why(tmp_path: Path) -> None:
    rules = tmp_path / "mine.yaml"
    rules.write_text(
        "rules:\n"
        "  - id: my-tp-needs-ib\n"
        "    source: H34\n"
        "    title: Wide TP at an InfiniBand site\n"
        '    when: "true"\n'
        "    prefer:\n"
        "      deployment:\n"
        '        expr: offer == null || deployment.tp < 8 || offer.fabric == "infiniband"\n'
        "        penalty: 1000\n"
        "  - id: my-big-jobs-north\n"
        "    source: H40\n"
        "    title: Big jobs north\n"
        '    when: "true"\n'
        "    prefer:\n"
        "      deployment:\n"
        '        expr: offer == null || deployment.nodes < 4 || offer.region == "jiangsu-north"\n'
        "        penalty: 1000\n"
    )
    placed = placement_rules(load_ruleset([rules]), _catalog())
    why = {k.rule: k.why for k in placed.skipped}
    assert "deployment.tp" in why["my-tp-needs-ib"]  # needs a sized layout: plan's
    assert "my-big-jobs-north" in placed.judged  # nodes is what a fleet line states
    catalog = _catalog()
    south = next(o for o in catalog.colo_offers.values() if o.region == "jiangsu-south")
    server = catalog.servers["r760xa-4gpu-l40s"]
    for count, fired in ((4, True), (3, False)):
        fleet = Fleet(servers=[FleetItem(server=server.id, count=count, multi_node=True)])
        hits = rule_hits(fleet, {server.id: server}, south, placed)
        assert any(h.rule == "my-big-jobs-north" for h in hits) == fired
