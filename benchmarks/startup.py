"""`gpusolve plan` on the README's first example against a bare import of its dependencies.

    python benchmarks/startup.py [--pairs 9] [--example examples/pretrain-70b-infiniband.yaml]

Whole processes, timed in pairs (bare, plan; bare, plan; ...) so that both halves of a pair
see the same load: the bare import is `import ortools.sat.python.cp_model, pydantic, yaml,
click` plus `from pydantic import BaseModel` (importing `pydantic` alone defers the model
machinery every pydantic user pays for), the plan is `python -m gpusolve plan EXAMPLE -q`
with its output thrown away. Per process it reads the CPU seconds (user + system, from
`wait4`) and the wall clock; the figures are the medians over the pairs and the ratio of
the medians (CPU first: on a shared machine the wall clock mostly measures the others).

Before the pairs, one run of each warms what a user's second run finds warm: compiled
bytecode (`PYTHONDONTWRITEBYTECODE` is unset for the children) and the user's cache
directory (`load/seen.py`, `load/document_cache.py`, `rules/cache.py`,
`rules/compiled.py`, `candidates/layout_cache.py`). Not run in CI.

`--frozen-bare` times a third process in each round: the bare import that also skips the
interpreter's last cycle collection at exit, as `gpusolve` does (`cli._exit_without_collecting`),
so the report can say how much of the ratio that alone accounts for.

`--base DIR` also times, in each round, the plan of another checkout (its `solver/` on
`PYTHONPATH`, run from DIR), e.g. the branch's base written by `git archive BASE | tar -x -C
DIR`: before and after under the same load, each against the same bare imports.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BARE = "import ortools.sat.python.cp_model, pydantic, yaml, click\nfrom pydantic import BaseModel\n"
FROZEN_AT_EXIT = "import atexit, gc\natexit.register(gc.freeze)\n"
TARGET_RATIO = 1.5


def timed(argv: Sequence[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child process; raises if it fails."""
    began = time.perf_counter()
    child = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        err = child.stderr.read().decode() if child.stderr else ""
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}:\n{err}")
    return usage.ru_utime + usage.ru_stime, wall


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--example", default="examples/pretrain-70b-infiniband.yaml")
    ap.add_argument(
        "--frozen-bare", action="store_true", help="also the bare import frozen at exit"
    )
    ap.add_argument("--base", type=Path, help="also time the plan of this checkout")
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    bare = [sys.executable, "-c", BARE]
    plan = [sys.executable, "-m", "gpusolve", "plan", args.example, "-q"]
    timed(bare, env)
    timed(plan, env)
    base = args.base.resolve() if args.base else None
    base_env = {**env, "PYTHONPATH": str(base / "solver")} if base else env
    if base:
        timed(plan, base_env, base)
    frozen = [sys.executable, "-c", FROZEN_AT_EXIT + BARE]
    frozen_cpu: list[float] = []
    base_cpu: list[float] = []
    pairs = []
    for _ in range(args.pairs):
        pairs.append((timed(bare, env), timed(plan, env)))
        if args.frozen_bare:
            frozen_cpu.append(timed(frozen, env)[0])
        if base:
            base_cpu.append(timed(plan, base_env, base)[0])
    bare_cpu = statistics.median(b[0] for b, _ in pairs)
    plan_cpu = statistics.median(p[0] for _, p in pairs)
    bare_wall = statistics.median(b[1] for b, _ in pairs)
    plan_wall = statistics.median(p[1] for _, p in pairs)
    load = os.getloadavg()[0]
    print(f"{args.pairs} pairs, load average {load:.2f} at the end")
    print(f"bare import: CPU {bare_cpu:.3f} s, wall {bare_wall:.3f} s (medians)")
    print(f"plan:        CPU {plan_cpu:.3f} s, wall {plan_wall:.3f} s (medians)")
    ratio = plan_cpu / bare_cpu
    verdict = "PASS" if ratio <= TARGET_RATIO else "FAIL"
    print(f"ratio of medians: CPU {ratio:.2f}x, wall {plan_wall / bare_wall:.2f}x")
    print(f"target <= {TARGET_RATIO}x (CPU): {verdict}")
    if base_cpu:
        base_median = statistics.median(base_cpu)
        print(f"plan of {base}: CPU {base_median:.3f} s (median), {base_median / bare_cpu:.2f}x")
    if frozen_cpu:
        frozen_median = statistics.median(frozen_cpu)
        print(
            f"bare import frozen at exit: CPU {frozen_median:.3f} s (median); "
            f"plan against it: {plan_cpu / frozen_median:.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
