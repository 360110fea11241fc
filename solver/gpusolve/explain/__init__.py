"""A solution in the Plan's words, never the entry to a solve (but for the search for the
requirements that conflict, which `infeasible.py` drives through `optimize/explain.py`):

- `parts.py`: deployments, sites and racks, binding constraints, solver facts;
- `lines.py` (with `network_lines.py`): the objective line by line, the TCO itemised;
- `compare.py`: two plans compared figure by figure (next-best and why-not plans);
- `bom.py`: the bill of materials, each line with its price's source;
- `infeasible.py`: when no plan exists, the smallest set of requirements that conflict.
"""
