"""A folder of pickled values, one file a key, in the user's private cache directory: what the
layout and document caches share (`candidates/layout_cache.py`, `load/document_cache.py`).

Read back only from the user's own 0700 directory (`load/seen.user_cache_dir`); a missing,
unreadable or foreign file is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from pathlib import Path
from typing import Any


def cache_folder(name: str) -> Path | None:
    """`name` under the user's private cache directory, or None where there is none."""
    from gpusolve.load.seen import user_cache_dir

    root = user_cache_dir()
    return None if root is None else root / name


def read(path: Path, pending: dict[str, bytes]) -> Any:
    """The value kept at `path`: this run's own (`pending`, not yet written) first, else the
    file's; None for a miss."""
    if path.name in pending:
        return pickle.loads(pending[path.name])
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # a foreign or truncated file is a miss
        return None


def prune(folder: Path, keep: int) -> None:
    """Remove the oldest files beyond the newest `keep`."""
    entries = [entry for entry in os.scandir(folder) if entry.is_file()]
    if len(entries) <= keep:
        return
    entries.sort(key=lambda entry: entry.stat().st_mtime_ns)
    for entry in entries[: len(entries) - keep]:
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
