"""Parsed YAML documents kept between runs of the command, in the user's private cache dir.

Why: reading the 13 YAML files of `gpusolve plan` on a shipped example (requirements,
catalogue, rules, finance terms) costs about 25 ms of CPU every run, the same every run:
building each value and its line and column from PyYAML's nodes (`yamlio.py`) is Python
work per value. Reading back the pickled result costs about 2 ms (benchmarks/README.md,
"Start-up"). Only the command switches it on (`kept_between_runs`, from `cli.main`): a
library caller parses every file.

Key: the SHA-256 of the file's text and of the code that parses it: gpusolve's version,
the Python and PyYAML versions, and the name, size and modification time of every source
file of `load/`, the parser's package (an edited or reinstalled parser is a new key, so
nothing stale is read). The path is not part of the key: the same text parses to the same
values and marks wherever it lies, and `yamlio` gives them the path asked for. Only a
document that parsed without error is kept; a file with an error is parsed every run and
gets its located error. Value: the pickled values and marks, one file per key under
`documents/`, written at exit and read back only from the user's own 0700 directory, as
the layout and rule caches are. A missing, unreadable or foreign file is a miss; failing
to write never fails a run; beyond `_MAX_FILES` the oldest files are removed.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import pickle
import sys
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from gpusolve.load import pickle_folder

# A document's values, the (line, column) of each value and of each key, by JSON path.
Parsed = tuple[Any, dict[Any, tuple[int, int]], dict[Any, tuple[int, int]]]

# Documents kept: a run reads a dozen; a user's own catalogues and requirements add a few.
_MAX_FILES = 512
_FOLDER = "documents"
_enabled = [False]
_new: dict[str, bytes] = {}


@contextlib.contextmanager
def kept_between_runs() -> Iterator[None]:
    """Within the block, `document` reads and keeps parsed documents on disk."""
    before = _enabled[0]
    _enabled[0] = True
    try:
        yield
    finally:
        _enabled[0] = before


def keeping() -> bool:
    """Whether documents are kept between runs, and so what is compiled from them: the
    rule engine's compiled expressions follow the same switch (`rules/compiled.py`), so
    that the command's entry point need not import the rule engine to turn it on."""
    return _enabled[0]


def parsed(text: str, parse: Callable[[], Parsed]) -> Parsed:
    """`parse()`, or what it gave on an earlier run for the same text and code."""
    folder = pickle_folder.cache_folder(_FOLDER) if _enabled[0] else None
    if folder is None:
        return parse()
    key = digest(text)
    found = pickle_folder.read(folder / key, _new)
    if _is_parsed(found):
        return found  # type: ignore[no-any-return]
    result = parse()
    if not _new:
        atexit.register(save)
    _new[key] = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    return result


def digest(text: str) -> str:
    h = hashlib.sha256(code_fingerprint().encode())
    h.update(b"\0")
    h.update(text.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


@cache
def code_fingerprint() -> str:
    """The versions and the parser's source files by name, size and modification time."""
    import yaml

    import gpusolve

    parts = [gpusolve.__version__, sys.version, yaml.__version__]
    for entry in sorted(os.scandir(os.path.dirname(__file__)), key=lambda e: e.name):
        if entry.name.endswith(".py"):
            stat = entry.stat()
            parts.append(f"{entry.name}|{stat.st_size}|{stat.st_mtime_ns}")
    return "\n".join(parts)


def _is_parsed(found: object) -> bool:
    """A (values, value marks, key marks) triple: anything else is a foreign file."""
    return (
        isinstance(found, tuple)
        and len(found) == 3
        and isinstance(found[1], dict)
        and isinstance(found[2], dict)
    )


def save() -> None:
    """Write the documents parsed in this run (at exit); never raises."""
    folder = pickle_folder.cache_folder(_FOLDER)
    if folder is None or not _new:
        return
    from gpusolve.atomic import write_bytes_atomic

    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o700, exist_ok=True)
        for key, data in _new.items():
            write_bytes_atomic(folder / key, data)
        _new.clear()
        pickle_folder.prune(folder, _MAX_FILES)
