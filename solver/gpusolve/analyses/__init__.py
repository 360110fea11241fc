"""Analyses built on one finished plan: each takes the `plan.Solved` that `make_plan`
returned (the run, the instance or scenarios solved, the solution) and gives the Plan back
with its part filled in, dispatching on the kind of solution (single or hedged):

- `topk.py`: the next-best distinct plans (`--top-k`);
- `whynot.py`: why a card, server, colo or cloud offer was not chosen (`--why-not`);
- `sensitivity.py`: how far each price and card efficiency may move before the plan
  changes (`--sensitivity`; its search in `probing.py`, its process pool in `pool.py`);
- `frontier.py`: the cost <-> time frontier, a sweep of plans over scaled deadlines.
"""
