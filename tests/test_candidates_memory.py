"""What the candidates keep per placement: at the market scale (a catalogue sixteen times
the shipped one) there are hundreds of thousands of placements, so nothing that can be
one shared object may be one object each."""

from __future__ import annotations

import yaml
from tests.support.shipped import ROOT

from gpusolve.candidates.generate import build_candidates
from gpusolve.load import load_catalog
from gpusolve.models.requirements import Requirements
from gpusolve.rules.policy import evaluate_policies


def test_placements_that_break_nothing_share_one_empty_set() -> None:
    data = yaml.safe_load((ROOT / "examples" / "finetune-7b-deadline.yaml").read_text())
    reqs = Requirements.model_validate(data)
    catalog = load_catalog().catalog
    policies, _ = evaluate_policies(reqs, catalog)
    instance = build_candidates(reqs, catalog, policies).instance
    untagged = [p for o in instance.owned for p in o.placements if not p.violates]
    assert len({id(p) for p in untagged}) > 1
    # CPython makes a new empty frozenset per `frozenset(())` call: one each would be
    # 216 bytes a placement.
    assert len({id(p.violates) for p in untagged}) == 1
