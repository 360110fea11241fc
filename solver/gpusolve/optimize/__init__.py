"""The optimisation stage: an exact CP-SAT model over precomputed deployment options.

It knows nothing of transformers: its input is `ir.Instance` (integers and ids), its
output `ir.Solution`. ortools is imported only inside this package.

The shape, in the order a plan goes through it:

- the exact model: `ir` (the data), `checks` (its contract), `prune` (what enters),
  `builder` and `model` (choices, servers, sites), `patterns` and `packing` (racks),
  `fabric` and `finance` (network, storage, money rules), `inventory` (servers already
  owned, racks already contracted), `costs` (money terms, budgets);
- the solve: `solve` (its table of contents), `stages` (the lexicographic criteria),
  `runner` (one CP-SAT solve per stage), `cpsat` (parameters), `tuning` (every tuning
  value, one frozen object); `search/` holds the large-instance search (warm start,
  rack-packing cuts, cores), which `solve` calls through one entry point by model size;
- reading and checking: `readout`, `validate` (an independent check of every plan),
  `explain` (conflicting requirements), `alternatives` (top-k), `binpack` (exact rack
  packings for readout);
- the two-stage plan over scenarios: `twostage/` (its model and its search); the
  purchase schedule over periods: `phased/` (its model, solve, explanations), solved by
  CP-SAT raced against HiGHS through `milp/` (the model's proto as MILP rows);
  `interrupt` and `guard` serve all of them (Ctrl-C, int64 limits).
"""
