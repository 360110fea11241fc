"""The optimisation stage: an exact CP-SAT model over precomputed deployment options.

It knows nothing of transformers: its input is `ir.Instance` (integers and ids), its
output `ir.Solution`. ortools is imported only inside this package.
"""
