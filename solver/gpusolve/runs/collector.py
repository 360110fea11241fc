"""The cycle collector paused while a command's process starts, on until it ends.

Start-up (importing the command's modules, ortools and pandas behind the planner, the
pydantic models, the loaders its options call) allocates hundreds of thousands of objects
that live until the process ends and form no garbage: the collector walked them over and
over (98 collections before `plan`'s work began on the README's first example, 0.02-0.03 s
of its CPU; benchmarks/README.md, "Start-up"). So the console entry (`cli.main`, for the process's
own command line only) pauses it, and the command's work resumes it: what start-up
allocated is frozen (never examined again), what the work allocates is collected as
before, so memory stays bounded however long the work runs. `plan` resumes it once its
planner is imported (`runs/plan.py`), every other command when its callback starts.
"""

from __future__ import annotations

import gc

_paused = [False]


def pause() -> None:
    gc.disable()
    _paused[0] = True


def resume() -> None:
    """The collector on again (once; nothing if it was not paused here)."""
    if _paused[0]:
        _paused[0] = False
        gc.freeze()
        gc.enable()
