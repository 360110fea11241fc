"""Compiled expressions and their cel-python evaluations, kept between runs of the command.

Why: with every tree read back from the tree cache (`cache.py`), loading the shipped rules
still cost `gpusolve plan` about 27 ms of CPU (unpickling 84 Lark trees, the static check,
splitting into units) and importing cel-python, Lark, regex and pendulum about 30 ms more,
the same every run; the terms cel-python must evaluate (60 evaluations of 23 terms on the
README's first example) give the same answers every run too (benchmarks/README.md,
"Start-up").

What is kept, per expression: each unit's fields read, its direct shape (`direct.py`), its
tree pickled (unpickled, which loads Lark, only when cel-python must evaluate the unit) and
its memo: the result of each cel-python evaluation by the values of the fields the unit
reads (`evaluate.Unit.run`), where the result is plain data (true, false, a number, a
string, a list of those, or an evaluation error). A CEL value of any other type is not kept:
that evaluation runs again in the next run.

Key: the expression's kind, context, text and the fields known non-null where it runs, in a
file stamped with the code that compiles and evaluates it: gpusolve's and Python's
versions and the name, size and modification time of every file of `rules/`, `models/`
(the declared types come from the models), cel-python and Lark. A changed rule is another
text, so another key; a file of other code is a miss as a whole and is replaced at exit. An
expression with an error is never kept: it is compiled every run and gets its located
error. The file lives in the user's own 0700 cache directory, as the other caches do; a
missing, unreadable, damaged (its digest) or foreign file is a miss, and failing to write
it never fails a run. Within a process, every load of an expression shares its units and
so their memos (the same expression gives the same answers).

Only the command keeps them, with the parsed documents they come from: the switch is the
document cache's (`load/document_cache.kept_between_runs`, from `cli.main`, which thus
imports no part of the rule engine for `gpusolve --help`). A library caller compiles every
expression, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import pickle
import sys
from collections.abc import Hashable
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path as FilePath

from gpusolve.load import document_cache
from gpusolve.rules.bindings import EvalFailure, Read
from gpusolve.rules.declarations import Path, variables_for
from gpusolve.rules.direct import Shape
from gpusolve.rules.evaluate import Program, Unit
from gpusolve.rules.templates import Template

_FILE = "rules-compiled.pickle"
# Expressions kept, the most recently used: the shipped rules have 75 distinct ones (66
# predicates and 18 advice messages, some alike); a user's rule files and edits add more.
_MAX_EXPRESSIONS = 256
# Evaluations kept per unit: a run of the examples needs at most a few dozen.
_MAX_MEMO = 256

Key = tuple[str, str, str, tuple[Path, ...]]  # kind, context, text, fields known non-null
Memo = dict[tuple[Hashable, ...], object]
# A predicate's layout is its units per term (`a && (b || c)`: 1, 2); a template's is its
# parts, None where a placeholder's unit goes.
Layout = tuple[int, ...] | tuple[str | None, ...]
UnitForm = tuple[tuple[Read, ...], bool, Shape | None, bytes]
EntryForm = tuple[Layout, frozenset[Path], tuple[UnitForm, ...], tuple[Memo, ...]]

_SKIP = object()


@dataclass
class _Expression:
    """One compiled expression: its units (their memos shared by every load of it in this
    process: the same expression gives the same answers) and how they are arranged."""

    layout: Layout
    nonnull: frozenset[Path]
    units: list[Unit]
    sizes: tuple[int, ...] | None  # the memos' sizes as read from the file; None if compiled

    def program(self, text: str) -> Program:
        units = iter(self.units)
        terms = [[next(units) for _ in range(n)] for n in self.layout if isinstance(n, int)]
        return Program(text, terms, self.nonnull)

    def template(self, text: str) -> Template:
        units = iter(self.units)
        return Template(text, [next(units) if p is None else str(p) for p in self.layout])


def predicate(text: str, context: str, nonnull: frozenset[Path]) -> Program:
    """`compile.compile_predicate` for the variables of `context`, or what an earlier run
    compiled for the same text and code. Raises CelError as the compiler does."""
    key: Key = ("predicate", context, text, tuple(sorted(nonnull)))
    found = STORE.get(key)
    if found is not None:
        return found.program(text)
    from gpusolve.rules.compile import compile_predicate

    program = compile_predicate(text, variables_for(context), nonnull)
    layout = tuple(len(term) for term in program.terms)
    STORE.add(key, _Expression(layout, program.nonnull_if_true, program.units, None))
    return program


def template(text: str, nonnull: frozenset[Path]) -> Template:
    """`templates.compile_template` for the variables of `when` (where advice is written),
    or what an earlier run compiled. Raises CelError as the compiler does."""
    key: Key = ("template", "when", text, tuple(sorted(nonnull)))
    found = STORE.get(key)
    if found is not None:
        return found.template(text)
    from gpusolve.rules.templates import compile_template

    compiled = compile_template(text, variables_for("when"), nonnull)
    layout = tuple(p if isinstance(p, str) else None for p in compiled.parts)
    units = [p for p in compiled.parts if isinstance(p, Unit)]
    STORE.add(key, _Expression(layout, frozenset(), units, None))
    return compiled


class _Store:
    """The file's entries (read once per process) and this run's expressions."""

    def __init__(self) -> None:
        self._disk: dict[Key, object] | None = None
        self._live: dict[Key, _Expression] = {}
        self._registered = False

    def forget(self) -> None:
        """What a new process starts with: nothing read, nothing of this run's."""
        self._disk = None
        self._live.clear()

    def get(self, key: Key) -> _Expression | None:
        """The expression compiled or read back earlier, or None (also when not kept)."""
        if not document_cache.keeping():
            return None
        found = self._live.get(key)
        if found is None:
            entry = self._read().get(key)
            found = None if entry is None else _expression(key, entry)
            if found is not None:
                self.add(key, found)
        return found

    def add(self, key: Key, expression: _Expression) -> None:
        if not document_cache.keeping():
            return
        self._live[key] = expression
        if not self._registered:
            self._registered = True
            atexit.register(self.save)

    def _read(self) -> dict[Key, object]:
        if self._disk is None:
            self._disk = {}
            path = _path()
            if path is not None:
                with contextlib.suppress(OSError):
                    self._disk = _decode(path.read_bytes())
        return self._disk

    def save(self) -> None:
        """Write the file when this run compiled or evaluated anything new (at exit); never
        raises."""
        changed = any(e.sizes != tuple(len(u.memo) for u in e.units) for e in self._live.values())
        path = _path() if changed else None
        if path is None:
            return
        from gpusolve.atomic import write_bytes_atomic

        # Least recently used first: entries this run did not touch, then this run's.
        entries = {k: v for k, v in self._read().items() if k not in self._live}
        for key, expression in self._live.items():
            with contextlib.suppress(pickle.PicklingError, TypeError, AttributeError):
                entries[key] = _entry(expression)
        kept = dict(list(entries.items())[-_MAX_EXPRESSIONS:])
        with contextlib.suppress(OSError, pickle.PicklingError, TypeError, RecursionError):
            write_bytes_atomic(path, encode(kept))
        self._disk = kept
        for expression in self._live.values():
            expression.sizes = tuple(len(u.memo) for u in expression.units)


STORE = _Store()


def _entry(expression: _Expression) -> EntryForm:
    """What the file keeps of an expression: plain data, trees pickled on their own."""
    units = tuple((u.reads, u.want_bool, u.shape, u.tree_pickle()) for u in expression.units)
    memos = tuple(_plain_memo(u.memo) for u in expression.units)
    # Pickled now, so that an unpicklable memo key loses this entry, not the file.
    pickle.dumps(memos, protocol=pickle.HIGHEST_PROTOCOL)
    return expression.layout, expression.nonnull, units, memos


def _expression(key: Key, entry: object) -> _Expression | None:
    """An expression from its kept entry; None for anything that is not one."""
    if not (isinstance(entry, tuple) and len(entry) == 4):
        return None
    layout, nonnull, forms, memos = entry
    if not (
        isinstance(layout, tuple)
        and isinstance(nonnull, frozenset)
        and isinstance(forms, tuple)
        and isinstance(memos, tuple)
        and len(memos) == len(forms)
        and all(isinstance(m, dict) for m in memos)
        and _fits(key[0], layout, len(forms))
    ):
        return None
    units = [_unit(form) for form in forms]
    if any(u is None for u in units):
        return None
    live = [u for u in units if u is not None]
    for unit, memo in zip(live, memos, strict=True):
        unit.memo = memo
    return _Expression(layout, nonnull, live, tuple(len(m) for m in memos))


def _fits(kind: str, layout: tuple[object, ...], count: int) -> bool:
    if kind == "predicate":
        ints = [n for n in layout if isinstance(n, int) and not isinstance(n, bool) and n > 0]
        return len(ints) == len(layout) and sum(ints) == count
    parts = [p for p in layout if p is None or isinstance(p, str)]
    return len(parts) == len(layout) and parts.count(None) == count


def _unit(form: object) -> Unit | None:
    if not (isinstance(form, tuple) and len(form) == 4):
        return None
    reads, want_bool, shape, tree = form
    if not (
        isinstance(reads, tuple)
        and all(_is_read(r) for r in reads)
        and isinstance(want_bool, bool)
        and (shape is None or isinstance(shape, Shape))
        and isinstance(tree, bytes)
    ):
        return None
    return Unit(reads, want_bool, shape, tree)


def _is_read(read: object) -> bool:
    return (
        isinstance(read, tuple)
        and len(read) == 2
        and isinstance(read[0], tuple)
        and len(read[0]) > 0
        and all(isinstance(name, str) for name in read[0])
        and read[1] in ("v", "n")
    )


def _plain_memo(memo: Memo) -> Memo:
    kept: Memo = {}
    for key, value in list(memo.items())[-_MAX_MEMO:]:
        plain = _plain(value)
        if plain is not _SKIP:
            kept[key] = plain
    return kept


def _plain(value: object) -> object:
    """`value` as plain data that prints and compares as it does, or _SKIP."""
    if value is None or isinstance(value, bool | EvalFailure):
        return value
    celtypes = sys.modules.get("celpy.celtypes")  # no CEL value exists before it is loaded
    if celtypes is not None and isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list):
        items = [_plain(v) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    return _SKIP


_DIGEST_BYTES = 32


def encode(entries: dict[Key, object]) -> bytes:
    """The file: a digest of the pickle, then the pickle, stamped with the code."""
    payload = pickle.dumps(
        {"code": code_fingerprint(), "entries": entries}, protocol=pickle.HIGHEST_PROTOCOL
    )
    return hashlib.blake2b(payload, digest_size=_DIGEST_BYTES).digest() + payload


def _decode(data: bytes) -> dict[Key, object]:
    """The entries of a file written by this code; {} for anything else. The digest catches
    a file damaged after it was written: a unit's tree is unpickled only when cel-python
    needs it, long after the file was read, so it must be whole when it is read."""
    payload = data[_DIGEST_BYTES:]
    if data[:_DIGEST_BYTES] != hashlib.blake2b(payload, digest_size=_DIGEST_BYTES).digest():
        return {}
    try:
        found = pickle.loads(payload)
    except Exception:  # a foreign file is a miss
        return {}
    if not (isinstance(found, dict) and found.get("code") == code_fingerprint()):
        return {}
    entries = found.get("entries")
    return entries if isinstance(entries, dict) else {}


def _path() -> FilePath | None:
    from gpusolve.load.seen import user_cache_dir

    root = user_cache_dir()
    return None if root is None else root / _FILE


@cache
def code_fingerprint() -> str:
    """The versions, and every file of the code that compiles and evaluates expressions by
    name, size and modification time."""
    import gpusolve

    here = FilePath(__file__).resolve().parent
    folders = [here, here.parent / "models"]
    for package in ("celpy", "lark"):
        spec = find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            folders += [FilePath(p) for p in spec.submodule_search_locations]
    parts = [gpusolve.__version__, sys.version]
    for folder in folders:
        with contextlib.suppress(OSError):
            for entry in sorted(os.scandir(folder), key=lambda e: e.name):
                if entry.is_file():
                    stat = entry.stat()
                    parts.append(f"{folder.name}/{entry.name}|{stat.st_size}|{stat.st_mtime_ns}")
    return "\n".join(parts)
