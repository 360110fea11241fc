"""Time of one layout search on typical inputs (the brief: under 20 ms a workload and server).

    PYTHONPATH=solver python benchmarks/layout_search.py [--repeats 5]

`search_layouts` for a 7B full fine-tune with a deadline, a 13B full fine-tune, a 7B LoRA and
a 13B chat service at 2,000 tokens/s, each on an 8 x A100 80GB board, an 8 x H100 board and a
PCIe L40S box (tests/factories/hardware.py), up to 8 nodes. Prints each (workload, server)
search's first call (cold: nothing of it memoised in the process) and the median of the
repeats after it (warm), and the median of the cold calls against the brief's 20 ms. A
timing, so it is a benchmark and not a test: a test may not depend on the machine's load.
Not run in CI.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "solver")]

from tests.factories.hardware import A100_80, H100, L40S, hgx, pcie_box  # noqa: E402
from tests.factories.requirements import preset_workload  # noqa: E402

from gpusolve.estimate import search_layouts  # noqa: E402
from gpusolve.models.params import Params  # noqa: E402
from gpusolve.models.requirements import ModelShape, make_workload  # noqa: E402

TARGET_S = 0.020


def workloads() -> list[object]:
    ft = {"kind": "full_finetune", "tokens": 2e9, "seq_len": 2048, "global_batch": 64}
    return [
        preset_workload("llama-2-7b", name="ft-7b", deadline_hours=24, **ft),
        preset_workload("llama-2-13b", name="ft-13b", **ft),
        make_workload(name="lora", kind="lora", model=ModelShape(params_b=7), tokens=1e8),
        make_workload(
            name="chat",
            kind="inference",
            model=ModelShape(preset="llama-2-13b"),
            context_len=4096,
            target_tokens_per_s=2000,
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    cold = []
    for hw in (hgx(A100_80), hgx(H100), pcie_box(L40S)):
        for w in workloads():
            samples = []
            for _ in range(1 + args.repeats):
                began = time.perf_counter()
                search_layouts(w, hw, Params(), max_nodes=8)  # type: ignore[arg-type]
                samples.append(time.perf_counter() - began)
            cold.append(samples[0])
            warm = statistics.median(samples[1:]) if args.repeats else float("nan")
            name = w.name  # type: ignore[attr-defined]
            first_ms, warm_ms = samples[0] * 1000, warm * 1000
            print(f"{hw.label:>16}  {name:>7}  cold {first_ms:7.1f} ms  warm {warm_ms:6.1f} ms")
    overall = statistics.median(cold)
    verdict = "PASS" if overall <= TARGET_S else "FAIL"
    print(f"median of the cold searches: {overall * 1000:.1f} ms (target <= 20 ms): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
