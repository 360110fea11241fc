"""A long solve's progress on the terminal: the stage, the time so far, the best plan found
and its gap to the proven bound, redrawn by tqdm on stderr about twice a second.

Drawn only on a terminal and without -q (logs and pipes stay clean). The solver thread
reports (`watch`); the waiting main thread redraws (`tick`, every 50 ms from
`interrupt.run_interruptibly`), so the time keeps moving while CP-SAT finds nothing new.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# Redraw at most this often (tqdm's own `mininterval` applies to updates, not refreshes).
REDRAW_S = 0.5


class SolveProgress:
    """What the search reports, and the bar that shows it (None when not drawn)."""

    def __init__(self, enabled: bool, currency: str) -> None:
        self.currency = currency
        self.started = time.monotonic()
        self.drawn_at = 0.0
        self.stage = "preparing"
        self.value: int | None = None
        self.bound: int | None = None
        self.lock = threading.Lock()
        self.bar: Any = None
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            # A terminal that reports no size (0 columns) would get nothing drawn.
            width = shutil.get_terminal_size(fallback=(100, 24)).columns
            self.bar = tqdm(
                total=None,
                desc=self.stage,
                file=sys.stderr,
                bar_format="gpusolve: {desc} [{elapsed}]{postfix}",
                leave=False,
                ncols=width,
            )

    def saying(self, say: Callable[[str], None]) -> Callable[[str], None]:
        """`say` (the command's progress lines) printed above the bar, not through it."""

        def said(line: str) -> None:
            if self.bar is None:
                say(line)
                return
            with self.bar.external_write_mode():
                say(line)

        return said

    def watch(self, stage: str, value: int | None, bound: int | None) -> None:
        """From the solver's thread: a new stage (value None), or a better plan."""
        with self.lock:
            if stage != self.stage:
                self.stage, self.value, self.bound = stage, None, None
            if value is not None:
                self.value, self.bound = value, bound

    def line(self) -> tuple[str, str]:
        """(stage, what is known so far) as the bar shows them."""
        with self.lock:
            stage, value, bound = self.stage, self.value, self.bound
        if value is None:
            return stage, "no plan yet"
        shown = f"best {value:,} {self.currency}"
        if bound is not None:
            gap = abs(value - bound) / max(1, abs(value))
            shown += f", gap {gap:.1%}"
        return stage, shown

    def tick(self) -> None:
        """From the waiting thread: redraw when due."""
        now = time.monotonic()
        if self.bar is None or now - self.drawn_at < REDRAW_S:
            return
        self.drawn_at = now
        stage, known = self.line()
        self.bar.set_description_str(stage, refresh=False)
        self.bar.set_postfix_str(known, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
