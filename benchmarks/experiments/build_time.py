"""Experiment: where `build()` spends its time, and the effect of a bulk first-fit bound.

`model._racks_bound` packs the largest demand a site could see with first-fit decreasing,
one item at a time: O(items x racks) with items in the hundreds of thousands at XL. The
bulk version below (a count per shape, open racks filled in bulk, stop at the availability
cap) returns the same number (see `--check`) in O(shapes x racks). It is swapped in at run
time; nothing in solver/ is edited. The proposed patch is /tmp/gpusolve-ffd.diff.

    python benchmarks/experiments/build_time.py --scale XL --seeds 0-1
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from generator import generate
from gpusolve.optimize import model as model_module
from gpusolve.optimize.model import build
from gpusolve.optimize.patterns import Shape, SitePatterns, max_count


def ffd_counts(
    counts: Mapping[Shape, int], rack_w: int, rack_units: int, stop_at: int | None
) -> int:
    loads: list[list[int]] = []
    for shape in sorted(counts, reverse=True):
        left = counts[shape]
        for load in loads:
            if left == 0:
                break
            take = min(left, max_count(shape, rack_w - load[0], rack_units - load[1]))
            load[0] += take * shape.power_w
            load[1] += take * shape.rack_units
            left -= take
        per_rack = max_count(shape, rack_w, rack_units)
        while left > 0:
            if stop_at is not None and len(loads) >= stop_at:
                return stop_at
            take = min(left, per_rack)
            loads.append([take * shape.power_w, take * shape.rack_units])
            left -= take
    return len(loads)


def racks_bound_bulk(b: Any, site: Any, pats: SitePatterns, demand_ub: dict[str, int]) -> int:
    counts = {
        shape: sum(demand_ub.get(k, 0) for k in members)
        for shape, members in zip(pats.shapes, pats.members, strict=True)
    }
    enforced = b.mode == "normal" and b.enforced(f"racks:{site.id}")
    return ffd_counts(
        counts, site.rack_w, site.rack_units, site.racks_available if enforced else None
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="XL")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--check", action="store_true", help="also compare bounds with the original")
    args = ap.parse_args()
    a, _, z = args.seeds.partition("-")
    for seed in range(int(a), int(z or a) + 1):
        instance = generate(args.scale, seed)
        original = model_module._racks_bound
        model_module._racks_bound = racks_bound_bulk
        try:
            start = time.perf_counter()
            fast = build(instance)
            fast_s = time.perf_counter() - start
        finally:
            model_module._racks_bound = original
        line = f"{args.scale} seed {seed}: build with bulk bound {fast_s:.2f}s {fast.stats}"
        if args.check:
            start = time.perf_counter()
            slow = build(instance)
            slow_s = time.perf_counter() - start
            same = all(slow.packing[s].total_ub == fast.packing[s].total_ub for s in slow.packing)
            line += f" | original {slow_s:.2f}s | same bounds: {same}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
