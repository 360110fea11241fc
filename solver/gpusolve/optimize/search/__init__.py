"""The large-instance search: what switches on only when a model's size asks for it.

Shape: `for_model` (the one entry point, below) picks `first.Search`, a `staged.LazyStages`
whose stage 1 starts from a warm start (`warmstart.py`, from `Tuning.warm_min_choices`
choices) and on the largest models searches growing cores of the choices (`core.py`,
with LP bounds from `relaxation.py`, `opening.py` and `dichotomy.py`, and the site
neighbourhood of `neighbourhood.py`, from `Tuning.core_min_choices`). Sites whose fills
are too many to enumerate are relaxed in the model and made exact by cuts between
solves (`lazy.py`). The exact model never imports this package; `solve.py` calls it.
"""

from __future__ import annotations

from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.model import Built
from gpusolve.optimize.runner import Prepare, Stages


def for_model(
    built: Built, config: SolveConfig, prepare: Prepare | None, start: float
) -> Stages | None:
    """The stages for a model that needs the large-instance search (relaxed sites, or
    enough choices for the warm start or the cores); None when the exact stages do."""
    tuning = config.tuning
    choices = built.stats["choice_vars"]
    if not built.relaxed and choices < min(tuning.warm_min_choices, tuning.core_min_choices):
        return None
    from gpusolve.optimize.search.first import Search

    return Search(built, config, prepare, start)
