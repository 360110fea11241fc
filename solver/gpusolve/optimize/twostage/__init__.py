"""Two-stage plans over scenarios: buy once, then rent and lay out per scenario.

`model.py` builds the CP-SAT model (the first-stage purchase shared by every scenario's
second stage, each priced by the single model's builders); `solve.py` solves it (the free
search, expected or worst case; the second stage alone for a given purchase; the hint
solves that start the search on large models).
"""
