"""The render stage: one typed Plan, written as text, json, yaml or markdown.

`render_plan` (from `plan.py`) is re-exported here; `bom.py` has `render_bom` (`plan
--bom`). Below them: `text.py` and `markdown.py` build the reports, `bom_tables.py` the
bill of materials, `fmt.py` the formatting they share. The other modules render the
other commands (`colo.py`, `estimate.py`, `rules.py` ...).
"""

from gpusolve.render.bom import render_bill
from gpusolve.render.plan import FORMATS, render_plan

__all__ = ["FORMATS", "render_bill", "render_plan"]
