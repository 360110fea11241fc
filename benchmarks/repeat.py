"""The same `plan` run several times, idle and beside CPU-bound processes: does it give the
same answer, and how long does it take?

    python benchmarks/repeat.py [--runs 5] [--burners 2] -- plan examples/phased-growth.yaml \\
        --catalog examples/phased/catalog.yaml

Each run writes the plan as JSON; per run it prints the load (idle or N burners), the
status, the TCO, the objective and its bound, a hash of the plan (its periods or
deployments: equal hashes, the same plan) and the wall time of the whole command. A
burner is a Python loop that keeps one core busy. Not run in CI.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path


def run_once(command: Sequence[str], out: Path) -> tuple[dict[str, object], float]:
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "gpusolve", *command, "-q", "--format", "json", "-o", str(out)]
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - start
    data: dict[str, object] = json.loads(out.read_text(encoding="utf-8"))
    return data, wall


def fingerprint(data: dict[str, object]) -> str:
    """A short hash of what the plan buys, rents and deploys (a schedule's periods, a
    single plan's deployments): equal hashes, the same plan."""
    what = data.get("periods", data.get("deployments"))
    text = json.dumps(what, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--burners", type=int, default=2)
    ap.add_argument("command", nargs="+", help="the gpusolve command, after --")
    args = ap.parse_args(argv)
    out = Path(tempfile.mkdtemp()) / "plan.json"
    for burners in (0, args.burners):
        busy = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)
        ]
        try:
            for _ in range(args.runs):
                data, wall = run_once(args.command, out)
                what = [data.get(k) for k in ("status", "tco", "objective", "best_bound")]
                load = "idle" if not burners else f"{burners} burners"
                print(load, *what, f"plan {fingerprint(data)}", f"{wall:.1f} s", flush=True)
        finally:
            for p in busy:
                p.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
