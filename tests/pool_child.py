"""Child process for tests/test_pool_signals.py: a pool of two workers whose tasks wait a
minute, so the test can kill this parent and watch the workers go. `--watcher` turns off
the parent-death signal: the portable watcher thread alone must end them."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from gpusolve.analyses import pool
from gpusolve.analyses.probing import Outcome, Parameter


@dataclass(frozen=True)
class Sleeper:
    parameter: Parameter

    def analyse(self, inputs: Any) -> Outcome:
        time.sleep(60)
        raise AssertionError("the parent was killed long before")


def main() -> None:
    if "--watcher" in sys.argv:
        pool.parent_death_signal = lambda: False
    tasks = [
        Sleeper(Parameter("price", f"item-{i}", f"price of item-{i}", "CNY", 1.0)) for i in (1, 2)
    ]
    pool.run_tasks(tasks, workers=2)


if __name__ == "__main__":
    main()
