"""Where the shipped data folders (catalog, rules, schemas, examples) live.

In a wheel they are packaged under `gpusolve/_data/`; in a source checkout (editable
install, tests) they sit at the repository root next to `solver/`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]
_CHECKOUT_ROOT = Path(__file__).resolve().parents[3]


@cache
def data_dir(name: str) -> Path:
    packaged = _PACKAGE_DIR / "_data" / name
    if packaged.is_dir():
        return packaged
    checkout = _CHECKOUT_ROOT / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"gpusolve is installed without its {name!r} data folder")
