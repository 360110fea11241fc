"""Layout searches kept between runs of the command, in the user's private cache directory.

Why: on the shipped examples the layout search is the largest part of `gpusolve plan`'s
own work after its imports (benchmarks/README.md, "Start-up"), and a planner run again on
the same requirements asks the same searches again. Only the command switches it on
(`kept_between_runs`, from `cli.main`): a library caller computes every search.

Key: the SHA-256 of every input of the search (the workload less `runs`, which the search
never reads, as `layout_memo` keys it; the hardware with its card; the parameters; the node
limit; `every_size`) and of the code that computes it: gpusolve's version, the path, size
and modification time of every source file of the package (an edited, updated or
reinstalled package is a new key, so nothing stale is read), and the Python and pydantic
versions the pickle needs. Value: the pickled `SearchResult`, one file per key under
`layouts/`, written at exit or every `_PENDING_MAX` searches (a temporary file renamed
over: never a partial file) and read back only from the user's own 0700 directory, as the
rule engine's caches are (`rules/cache.py`). A missing, unreadable or foreign file is a
miss; failing to write never fails a run; beyond `_MAX_FILES` the oldest files are removed.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import pickle
import sys
from collections.abc import Callable, Iterator
from dataclasses import fields
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from gpusolve.load import pickle_folder

if TYPE_CHECKING:
    from gpusolve.estimate.hardware import Hardware
    from gpusolve.estimate.searchcore import SearchResult
    from gpusolve.models.params import Params
    from gpusolve.models.requirements import Workload

# Searches kept: `plan` on a shipped example asks 8-60, a catalogue sixteen times larger a
# few thousand.
_MAX_FILES = 8192
_FOLDER = "layouts"
# Searches held in memory before they are written: a run writes its searches at exit, or
# every this many (about 5 kB pickled each; a cold run at sixteen times the shipped
# catalogue and five workloads holds 2,240 of them, 10.7 MB, ten times that at fifty).
_PENDING_MAX = 1024
_enabled = [False]
_new: dict[str, bytes] = {}
_registered: list[object] = []  # `save` registered to run at exit (once a process)


@contextlib.contextmanager
def kept_between_runs() -> Iterator[None]:
    """Within the block, `search` reads and keeps searches on disk."""
    before = _enabled[0]
    _enabled[0] = True
    try:
        yield
    finally:
        _enabled[0] = before


def search(
    workload: Workload,
    hw: Hardware,
    params: Params,
    max_nodes: int,
    every_size: bool,
    compute: Callable[[], SearchResult],
) -> SearchResult:
    """`compute()`, or the answer it gave on an earlier run for the same inputs and code."""
    folder = pickle_folder.cache_folder(_FOLDER) if _enabled[0] else None
    if folder is None:
        return compute()
    from gpusolve.estimate.searchcore import SearchResult

    key = digest(workload, hw, params, max_nodes, every_size)
    found = pickle_folder.read(folder / key, _new)
    if isinstance(found, SearchResult):  # anything else is a foreign file: a miss
        return found
    result = compute()
    if not _registered:
        _registered.append(atexit.register(save))
    _new[key] = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    if len(_new) >= _PENDING_MAX:
        _flush()
    return result


def digest(workload: Workload, hw: Hardware, params: Params, max_nodes: int, every: bool) -> str:
    h = hashlib.sha256(code_fingerprint().encode())
    h.update(workload.model_dump_json(exclude={"runs"}).encode())
    for f in fields(hw):
        value = getattr(hw, f.name)
        h.update(f"\0{f.name}=".encode())
        h.update(value.model_dump_json().encode() if f.name == "card" else repr(value).encode())
    h.update(f"\0{params!r}\0{max_nodes}\0{every}".encode())
    return h.hexdigest()


@cache
def code_fingerprint() -> str:
    """gpusolve's version, the Python and pydantic versions, and every source file of the
    package (`files_fingerprint`); computed once a process."""
    import pydantic

    import gpusolve

    versions = f"{gpusolve.__version__}|{sys.version}|{pydantic.VERSION}"
    return files_fingerprint(Path(gpusolve.__file__).resolve().parent, versions)


def files_fingerprint(root: Path, versions: str) -> str:
    """Every `.py` file under `root` by path, size and modification time (stat only: a few
    milliseconds for the package's files)."""
    h = hashlib.sha256(versions.encode())
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                stat = os.stat(path)
                relative = os.path.relpath(path, root)
                h.update(f"\0{relative}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return h.hexdigest()


def save() -> None:
    """Write the searches of this run still held, then keep the newest `_MAX_FILES` (at
    exit; pruning earlier could remove a search this run asks again); never raises."""
    _flush()
    folder = pickle_folder.cache_folder(_FOLDER)
    if folder is not None:
        with contextlib.suppress(OSError):  # a folder never made: nothing to prune
            pickle_folder.prune(folder, _MAX_FILES)


def _flush() -> None:
    """Write the searches held in memory. Those that cannot be written are dropped: a
    miss next run, never a failure."""
    folder = pickle_folder.cache_folder(_FOLDER)
    if folder is None or not _new:
        return
    try:
        with contextlib.suppress(OSError):
            folder.mkdir(mode=0o700, exist_ok=True)
            for key, data in _new.items():
                _write(folder / key, data)
    finally:
        _new.clear()


def _write(path: Path, data: bytes) -> None:
    """A private temporary file beside the target, renamed over it: never a partial file.
    No fsync: a cache lost in a crash is only a miss."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
