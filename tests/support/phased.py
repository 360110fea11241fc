"""A small chat service in northern Jiangsu (no cloud offer there in the shipped catalogue,
so it buys), the schedule's JSON Schema: the phased tests' common inputs."""

from __future__ import annotations

import json

from tests.support.shipped import ROOT

SCHEDULE_SCHEMA = json.loads((ROOT / "schemas" / "schedule.schema.json").read_text())
CHAT_NORTH = """currency: CNY
horizon_months: 6
regions:
  allowed: [苏北]
workloads:
  - name: chat
    kind: inference
    model:
      preset: llama-2-7b
    precision: fp16
    concurrency: 4
    target_tokens_per_s: 200
"""
QUARTERS = "periods:\n  length_months: 3\n"


def phased_example_unsplit() -> str:
    """The shipped phased example sized to the estimate as it stands (margin 0) and with
    each service on one platform (`split: false`): the schedule that buys H20 servers in
    later periods at their price trend and payment terms, which the tests of those
    mechanisms read. With the default margins the chat's growth is rented; split, the
    growth goes to a rented burst beside the servers already bought."""
    import yaml

    data = yaml.safe_load((ROOT / "examples" / "phased-growth.yaml").read_text(encoding="utf-8"))
    data["margin"] = 0
    for w in data["workloads"]:
        if w.get("kind") == "inference":
            w["split"] = False
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
