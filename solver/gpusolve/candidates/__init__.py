"""The candidates stage: deployment options per workload, with rejection reasons.

For each workload and each server SKU (and cloud offer) the physics searches parallel
layouts; rules filter and price them; the result is an optimiser `Instance` plus the
metadata needed to render and explain a plan.
"""
