"""Unit constants. Inside the estimate package everything is SI: bytes, FLOP, seconds.

GB means 10^9 bytes wherever a figure is shown (never GiB), as datasheets use it; a card's
capacity is what the device reports (the catalogue's memory_reported_mib), converted to bytes.
"""

from __future__ import annotations

GB = 1e9
"""Bytes in one GB (decimal, 10^9)."""

GBIT_BYTES_PER_S = 1e9 / 8
"""Bytes per second in one Gbit/s (network line rates are per direction)."""

SECONDS_PER_HOUR = 3600.0

BILLION = 1e9
"""Parameters in one `params_b` unit."""
