"""Procurement over time: one CP-SAT model of a purchase schedule over periods.

`ir.py` holds the schedule's data; `model.py` builds each period from the single plan's own
builders (choices, servers, exact rack packing, fabric and storage, money) and links the
periods by what is bought, contracted and owned; `solve.py` solves and reads it out;
`explain.py` names the requirements that conflict; `alternatives.py` finds the next-best
distinct schedules and schedules with an item forced in; `relax.py` holds explain mode's
hooks.
"""
