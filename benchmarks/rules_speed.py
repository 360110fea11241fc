"""Rules stage speed: load the shipped rule set and evaluate it for 20 workloads against
the whole shipped catalogue (issue target: under 0.5 s).

Run: python benchmarks/rules_speed.py [--repeat 5] [--parser seeded|no-trees|public]
Each repetition runs in a fresh interpreter, so the one-off cost of building the CEL parser
(or loading its cached tables) is included; the figure is CPU time of that child, which a
noisy machine disturbs less than wall time, and of that the part spent loading the rules.
`--parser no-trees` parses every expression (no tree cache); `--parser public` also builds
the parser the way cel-python's public API does (no table cache): the comparisons in
benchmarks/README.md ("Rules start-up").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

TARGET_S = 0.5

CHILD = r"""
import json, sys, time
import gpusolve.rules.cache as cache
if sys.argv[1] == "public":
    cache.seed_parser = lambda: None  # cel-python builds its own parser, without a cache
if sys.argv[1] in ("public", "no-trees"):
    cache.TREES.lookup = lambda text: None  # parse every expression
    cache.TREES.remember = lambda text, tree: None
from gpusolve.load import load_catalog
from gpusolve.models.requirements import Requirements
from gpusolve.rules import ActivationCache, evaluate_workload, load_ruleset

kinds = ["pretrain", "full_finetune", "lora", "qlora", "inference"]
sizes = [0.5, 1.3, 7, 13, 34, 70, 180, 400]
workloads = []
for i in range(20):
    kind = kinds[i % 5]
    w = {"name": f"w{i}", "kind": kind, "model": {"params_b": sizes[i % 8]},
         "schedule": ["always", "day", "night"][i % 3], "seq_len": [2048, 8192][i % 2]}
    if kind == "inference":
        w["target_tokens_per_s"] = 1000
    else:
        w.update(tokens=1e9, deadline_hours=[48, 200, 720][i % 3])
    workloads.append(w)
reqs = Requirements.model_validate({"workloads": workloads})
catalog = load_catalog().catalog
start = time.process_time()
ruleset = load_ruleset()
load_s = time.process_time() - start
cache = ActivationCache(catalog.cards)
checks = 0
for w in reqs.workloads:
    wr = evaluate_workload(ruleset, w, reqs)
    for kind, items, fact in (
        ("card", catalog.cards.values(), cache.card),
        ("server", catalog.servers.values(), cache.server),
        ("offer", catalog.colo_offers.values(), cache.offer),
        ("cloud", catalog.cloud_offers.values(), cache.cloud),
    ):
        for item in items:
            facts = fact(item)
            wr.check(kind, facts)
            wr.penalty(kind, facts)
            checks += 2
print(json.dumps({"cpu_s": time.process_time() - start, "load_s": load_s, "checks": checks}))
"""


def measure(parser: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, parser], capture_output=True, text=True, check=True
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--parser", choices=("seeded", "no-trees", "public"), default="seeded")
    args = parser.parse_args()
    runs = [measure(args.parser) for _ in range(args.repeat)]
    median = statistics.median(r["cpu_s"] for r in runs)
    load = statistics.median(r["load_s"] for r in runs)
    verdict = "PASS" if median < TARGET_S else "FAIL"
    print(
        f"rules: load + evaluate 20 workloads x whole catalogue ({int(runs[0]['checks'])} "
        f"checks): median {median:.3f} s CPU ({load:.3f} s loading) over {len(runs)} runs "
        f"(target < {TARGET_S} s): {verdict}"
    )


if __name__ == "__main__":
    main()
