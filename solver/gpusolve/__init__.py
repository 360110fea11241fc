"""gpusolve: plan GPU purchases, rentals and colocation with traceable rules and CP-SAT.

The package follows one pipeline (see README): load -> estimate -> rules -> candidates
-> optimize -> render. Heavy imports (ortools) happen only inside the stages that need them.
"""

__version__ = "0.1.0"
