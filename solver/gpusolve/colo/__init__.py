"""`gpusolve colo`: rank colocation offers for a fleet of servers (`compare.py`), with the
placement rules `plan` applies judged on each offer (`placement.py`)."""
