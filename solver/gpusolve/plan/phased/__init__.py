"""`plan` with `periods:`: the purchase schedule, a third kind of finished plan.

`inputs.py` builds each period's instance from the requirements and the catalogue;
`solve.py` solves the schedule and its baselines into a `Solved` (the single plan's and the
hedged plan's record, `plan/solved.py`); `schedule.py` turns a solved schedule into the
`Schedule` `plan` prints, `bom.py`, `capacity.py` and `views.py` what it shows per period,
`baseline.py` the ordinary single plan priced over the periods, `explain.py` the schedule
in explain mode.
"""
