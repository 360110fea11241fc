"""Unit constants. Inside the estimate package everything is SI: bytes, FLOP, seconds.

GB means 10^9 bytes everywhere (never GiB), as datasheets and the catalogue use it.
"""

from __future__ import annotations

GB = 1e9
"""Bytes in one GB (decimal, 10^9)."""

TERA = 1e12
"""FLOP/s in one TFLOPS."""

GBIT_BYTES_PER_S = 1e9 / 8
"""Bytes per second in one Gbit/s (network line rates are per direction)."""

SECONDS_PER_HOUR = 3600.0

BILLION = 1e9
"""Parameters in one `params_b` unit."""
