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
