"""A MILP backend for models that are MILPs: the CP-SAT model translated from its proto
(`translate.py`) and solved by HiGHS (`highs.py`), the answer checked by CP-SAT itself."""
