"""Every tuning value of the search, in one frozen object passed in (`SolveConfig.tuning`).

None of these changes what a plan costs or whether it is proven optimal: they decide how
the time is spent. Each field states the rule and, in one line, why; the measurements
behind each value are in `benchmarks/README.md` ("Why the search is tuned as it is").
Tests pass their own `Tuning` instead of patching module constants.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tuning:
    # --- the lexicographic stages (`solve.py`, `stages.py`)
    # Consecutive criteria fold into one objective while the product of their ranges stays
    # below this: the folded weights then stay exact inside int64.
    fold_limit: int = 2**52
    # Share of the time limit any stage after the first may take: the cost is proven by
    # then, and a tie-break that runs out still returns a plan at that cost.
    later_stage_share: float = 0.25
    # Time reserved after the last solve, per choice variable, for evaluating and reading
    # out the plan, so the answer arrives within the caller's limit...
    finish_s_per_choice: float = 1.6e-5
    # ...but never more than this share of the limit.
    finish_max_share: float = 0.1
    # Time for evaluating a fully fixed plan: a propagation, milliseconds in practice.
    evaluate_s: float = 10.0
    # CP-SAT's deterministic work for completing and checking each fallback selection
    # (`fallback.py`: its choices closed, servers and racks left to fill): enough for the
    # packing search of a few sites, bounded so a failed selection costs little.
    fallback_work: float = 1.0
    # From this many choice variables each fallback selection is completed in a model of
    # the instance cut down to its choices: a clone of the whole model costs more than the
    # completion (47 s for three selections at 421,086 choices, none completed).
    fallback_cut_min_choices: int = 50_000

    # --- CP-SAT's parameters (`cpsat.py`)
    # Below this many choice variables one worker solves whatever the caller asks: a
    # second only adds its start-up to a proof of milliseconds.
    parallel_min_choices: int = 500
    # Simplex iterations per root LP call: enough for the root LP to finish in one call,
    # so its bound arrives before the search instead of interleaved with it.
    root_lp_iterations: int = 100_000
    # From this many choice variables LNS is off: it copies the whole model per
    # neighbourhood, doubling the peak memory for no better plan.
    lns_max_choices: int = 50_000
    # Two workers split one branch-and-bound tree (CP-SAT's shared tree search) rather
    # than run two different searches: the warm start usually hands over the optimum, and
    # what is left is the proof, which a shared tree halves where two searches repeat it.
    two_workers_share_tree: bool = True

    # --- rack packing checked between solves (`search/lazy.py`)
    # Dual weights of a cut are integers out of this (many divisors: 1/2 ... 1/8, 1/10 and
    # 1/12 are exact).
    cut_scale: int = 840
    # A site's plan whose shapes have more fills than this is not packed exactly (first-fit
    # and the lower bound instead): the unbounded enumeration can exhaust memory.
    fill_limit: int = 5000
    # A stage whose first relaxed solve took less than this share of its time is solved
    # again after its cuts even when it cannot beat `give_up`: its repaired plan can be far
    # dearer than a real one near its optimum.
    give_up_share: float = 0.25
    # A relaxed site cut this many times is packed per rack (exact) in every later solve:
    # monotone cuts can be dodged by swapping one server shape for a similar one. 0 packs
    # every relaxed site per rack from the first solve.
    exact_after_cuts: int = 2

    # --- warm start (`search/warmstart.py`)
    # From this many choice variables the search starts from the warm start's plan; below
    # it CP-SAT's own first plan arrives in milliseconds and the warm start is overhead.
    warm_min_choices: int = 500
    # Share of the time left the LP, and then the restricted solve, may each take.
    warm_share: float = 0.1
    # Each workload's this many standalone-cheapest choices (and its rentals) are always in
    # the restricted set, so that it has a plan when the cheapest ones break a shared limit.
    fallback_choices: int = 4

    # --- core search (`search/core.py`, `opening.py`, `dichotomy.py`, `neighbourhood.py`)
    # From this many choice variables stage 1 searches cores: CP-SAT's own root LP cannot
    # finish within the limit there.
    core_min_choices: int = 50_000
    # Share of the time left the LP may take in core mode: the core search cannot start
    # without it.
    core_lp_share: float = 0.5
    # Each core holds this many times the open choices of the previous one: larger steps
    # gave worse gaps on most large instances.
    core_growth: float = 3.0
    # Share of the time left the sites' own LPs (`opening.py`) may take.
    opening_share: float = 0.1
    # Share of the time left both halves' LPs of the dichotomy may take together.
    dichotomy_share: float = 0.15
    # A dichotomy half whose bound is not this share above the LP's is not worth the other
    # half's LP.
    dichotomy_min_gain: float = 1e-4
    # Share of the time left the neighbourhood of the best plan's sites may take before a
    # core: enough for the plan CP-SAT would find late in the core.
    neighbourhood_share: float = 0.2
    # GLOP's parameters for every LP: all-slack start and Dantzig pricing, 3-4x faster than
    # GLOP's defaults on the largest LPs.
    glop_parameters: str = (
        "initial_basis: NONE optimization_rule: DANTZIG feasibility_rule: DANTZIG"
    )


DEFAULT = Tuning()
