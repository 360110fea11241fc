"""A catalogue N times the shipped one, and requirements with W workloads: the market scale.

    python benchmarks/market.py OUT_DIR [--copies 16] [--workloads 5] [--seed 0]

Writes OUT_DIR/catalog.yaml, holding copies 1..N-1 of the shipped cards, servers, cloud
offers and colocation offers (so that with the shipped catalogue, which `plan` reads
first, there are N of each), each copy with new ids (`-mK`), its references to cards
renamed to match, and its prices jittered by a uniform factor in [0.95, 1.05]
(illustrative, as the shipped prices are); and OUT_DIR/requirements.yaml with the
workloads of the shipped examples, taken in turn and renamed, W of them, under the first
example's settings less its budget (a cap sized for one 70B pretraining: with three of
them among 20 workloads no plan keeps under it). Then

    gpusolve plan OUT_DIR/requirements.yaml --catalog OUT_DIR/catalog.yaml

Not run in CI: a plan at x16 with 5 workloads takes minutes and gigabytes.

    python benchmarks/market.py OUT_DIR --peers highs,cbc [--time-limit 60]

also builds the instance `plan` solves from those files (`prepare_run`, `prepare`: the
shipped catalogue and rules, the market filter) and solves it with each peer in turn
(`peers.py`, the same model as a MILP); it prints one JSON line (per peer: status,
objective, bound, seconds, the validator's problems with the plan). `run.py --scales
XL5,XL20,XL50` runs `plan` and this in child processes, to read their peak memory.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "catalog"
SECTIONS = {"cards": "cards.yaml", "servers": "servers.yaml", "cloud_offers": "cloud.yaml"}
COLO = "colo-jiangsu.yaml"
PRICES = ("price", "price_per_hour", "price_per_month", "rack_price_per_month")
EXAMPLES = (
    "pretrain-70b-infiniband.yaml",
    "finetune-7b-deadline.yaml",
    "chat-day-lora-night.yaml",
    "chat-70b-aggregated.yaml",
    "south-latency-north-batch.yaml",
)


def jittered(item: dict[str, Any], rng: random.Random) -> None:
    for key in PRICES:
        value = item.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            scaled = value * rng.uniform(0.95, 1.05)
            item[key] = round(scaled) if isinstance(value, int) else round(scaled, 2)


def copies(items: Sequence[dict[str, Any]], n: int, rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k in range(1, n):
        for item in items:
            copy = dict(item)
            copy["id"] = f"{item['id']}-m{k}"
            if "card" in copy:
                copy["card"] = f"{item['card']}-m{k}"
            jittered(copy, rng)
            out.append(copy)
    return out


def catalogue(n: int, rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {"currency": "CNY"}
    for section, name in SECTIONS.items():
        items = yaml.safe_load((CATALOG / name).read_text())[section]
        out[section] = copies(items, n, rng)
    colo = yaml.safe_load((CATALOG / COLO).read_text())["colo_offers"]
    out["colo_offers"] = copies(colo, n, rng)
    return out


def requirements(count: int) -> dict[str, Any]:
    """The examples' workloads in turn (renamed `wN`), under the first example's settings
    without its budget."""
    docs = [yaml.safe_load((ROOT / "examples" / name).read_text()) for name in EXAMPLES]
    pool = [w for doc in docs for w in doc["workloads"]]
    base = {k: v for k, v in docs[0].items() if k not in ("workloads", "budget")}
    workloads = []
    for i in range(count):
        w = dict(pool[i % len(pool)])
        w["name"] = f"w{i}"
        workloads.append(w)
    return {**base, "workloads": workloads}


def write(out: Path, n: int, workloads: int, seed: int) -> None:
    """The catalogue and requirements files of one market case under `out`."""
    rng = random.Random(f"gpusolve-market/{n}/{seed}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "catalog.yaml").write_text(yaml.safe_dump(catalogue(n, rng)))
    reqs = requirements(workloads)
    (out / "requirements.yaml").write_text(yaml.safe_dump(reqs, sort_keys=False))


def instance_of(out: Path) -> Any:
    """The `ir.Instance` that `plan OUT/requirements.yaml --catalog OUT/catalog.yaml`
    solves (the shipped catalogue first, as `--catalog` adds to it; no extra rules)."""
    from gpusolve.candidates.prepare import prepare
    from gpusolve.load.data import data_dir
    from gpusolve.plan.inputs import prepare_run

    catalog = [data_dir("catalog"), out / "catalog.yaml"]
    run = prepare_run(out / "requirements.yaml", catalog, [])
    return prepare(run.reqs, run.catalog, run.policies).cand.instance


def peer_runs(out: Path, names: Sequence[str], limit: float) -> dict[str, dict[str, Any]]:
    """The peers on the market instance, built and translated once: each one's outcome and
    the validator's verdict on its plan (`validate.check`)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import peers
    from gpusolve.optimize.validate import check

    start = time.perf_counter()
    instance = instance_of(out)
    candidates_s = time.perf_counter() - start
    start = time.perf_counter()
    translation = peers.translate(instance)
    translate_s = time.perf_counter() - start
    found: dict[str, dict[str, Any]] = {}
    for name in names:
        solver = {"highs": peers.solve_highs, "cbc": peers.solve_cbc}[name]
        result = solver(translation, limit)
        problems: list[str] = []
        if result.values is not None:
            plan = peers.to_solution(translation, result.values, result.status, result.total_s)
            problems = check(instance, plan)
        found[name] = {
            "status": result.status,
            "objective": result.objective,
            "bound": result.bound,
            "candidates_s": candidates_s,
            "translate_s": translate_s,
            "build_s": result.build_s,
            "solve_s": result.solve_s,
            "columns": len(translation.milp.names),
            "rows": len(translation.milp.rows),
            "problems": problems[:3],
        }
    return found


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--workloads", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peers", help="solve the instance with these peers (highs,cbc)")
    ap.add_argument("--time-limit", type=float, default=60.0, help="each peer's, s")
    args = ap.parse_args(argv)
    write(args.out, args.copies, args.workloads, args.seed)
    if args.peers:
        names = [n for n in args.peers.split(",") if n]
        print(json.dumps(peer_runs(args.out, names, args.time_limit)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
