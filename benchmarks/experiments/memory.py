"""Experiment: peak RSS at XL by stage and configuration, each in a fresh child process.

python benchmarks/experiments/memory.py --scale XL --seed 0 --limit 30
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = """
import json, resource, sys, time
sys.path.insert(0, {bench!r}); sys.path.insert(0, {here!r})
from generator import generate
from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.model import build
from gpusolve.optimize.solve import solve
instance = generate({scale!r}, {seed})
after_generate = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
mode = {mode!r}
if mode == "build":
    build(instance)
elif mode == "bins":
    from gpusolve.optimize.builder import BuildOptions
    solve(instance, SolveConfig(time_limit_s={limit}, workers={workers}),
          BuildOptions(fallback="bins"))
else:
    solve(instance, SolveConfig(time_limit_s={limit}, workers={workers}))
print(json.dumps({{"generate_kb": after_generate,
                   "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
"""

CONFIGS = {
    "build only": ("build", 1),
    "solve 2 workers": ("solve", 2),
    "solve 1 worker": ("solve", 1),
    "per-rack bins 1 worker": ("bins", 1),
}


def measure(scale: str, seed: int, mode: str, workers: int, limit: float) -> tuple[float, float]:
    code = CHILD.format(
        bench=str(HERE.parent), here=str(HERE), scale=scale, seed=seed, mode=mode,
        workers=workers, limit=limit,
    )  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    own = json.loads(out.strip().splitlines()[-1])
    return own["generate_kb"] / 1024, max(usage.ru_maxrss, own["peak_kb"]) / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="XL")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=30.0)
    args = ap.parse_args()
    for name, (mode, workers) in CONFIGS.items():
        gen, peak = measure(args.scale, args.seed, mode, workers, args.limit)
        print(
            f"{args.scale} seed {args.seed} {name:>22}: peak {peak:7.0f} MB "
            f"(after generate {gen:.0f} MB)",
            flush=True,
        )


if __name__ == "__main__":
    main()
