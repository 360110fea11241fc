"""Safe YAML reading that remembers where every value came from.

PyYAML's composer gives nodes with marks; we construct plain Python from those nodes
ourselves so that (1) each JSON path maps back to a line and column for error messages,
(2) alias expansion is counted and capped (a "billion laughs" file is an input error,
not a hang), (3) duplicate keys are errors instead of silently keeping the last one.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gpusolve.errors import InputError

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_NODES = 200_000  # after alias expansion
MAX_DEPTH = 64

JsonPath = tuple[str | int, ...]


# libyaml's C parser is ~10x faster than the pure-Python one; both give nodes with marks.
_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[valid-type, misc]
    """SafeLoader that also reads YAML 1.2 floats such as `3e9` and `2.0e8`.

    YAML 1.1 (PyYAML's default) needs a dot and a signed exponent (`3.0e+9`), so `3e9`
    would silently become the string "3e9" - a trap for anyone writing token counts.
    """


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


@dataclass
class Document:
    path: Path
    data: Any
    value_marks: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)
    key_marks: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.path)

    def locate(self, json_path: JsonPath, *, key: bool = False) -> tuple[int, int] | None:
        """1-based (line, column) of the node at json_path, or of its nearest ancestor."""
        marks = self.key_marks if key else self.value_marks
        probe = tuple(json_path)
        while True:
            if probe in marks:
                return marks[probe]
            if key and probe in self.value_marks:
                return self.value_marks[probe]
            if not probe:
                return None
            probe = probe[:-1]


def read_yaml(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> Document:
    from gpusolve.load.document_cache import parsed

    text = _read_text(path, max_bytes)
    data, value_marks, key_marks = parsed(text, lambda: _parts(_parse(path, text)))
    return Document(path=path, data=data, value_marks=value_marks, key_marks=key_marks)


def _parts(
    doc: Document,
) -> tuple[Any, dict[JsonPath, tuple[int, int]], dict[JsonPath, tuple[int, int]]]:
    return doc.data, doc.value_marks, doc.key_marks


def _parse(path: Path, text: str) -> Document:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        what = exc.problem or "YAML syntax error"
        raise InputError.single(
            str(path),
            f"YAML syntax error: {what}",
            line=line,
            column=col,
            hint="check indentation, colons and quotes near this position",
        ) from None
    except yaml.reader.ReaderError as exc:
        raise _reader_error(path, text, exc) from None
    except yaml.YAMLError as exc:
        raise InputError.single(str(path), f"YAML error: {exc}") from None
    finally:
        loader.dispose()
    if node is None:
        raise InputError.single(str(path), "the file is empty", hint="see the shipped examples")
    doc = Document(path=path, data=None)
    builder = _Builder(doc, _Loader(""))
    doc.data = builder.build(node, (), 0)
    return doc


# What YAML 1.1 allows in a stream (its "printable" set); anything else is a ReaderError.
_NOT_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def _reader_error(path: Path, text: str, exc: yaml.reader.ReaderError) -> InputError:
    """A control character or NUL byte, located by line and column.

    The reader reports only an offset (in bytes for libyaml, characters for PyYAML), so the
    character is found again in the decoded text, where line and column mean what an
    editor shows.
    """
    found = _NOT_PRINTABLE.search(text)
    if found is None:
        return InputError.single(str(path), f"YAML error: {exc.reason}")
    index = found.start()
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    code = ord(found.group())
    return InputError.single(
        str(path),
        f"character U+{code:04X} is not allowed in YAML ({exc.reason})",
        line=line,
        column=column,
        hint='delete it or write it as an escape inside double quotes, e.g. "\\x01"',
    )


def _read_text(path: Path, max_bytes: int) -> str:
    name = str(path)
    if not path.exists():
        raise InputError.single(name, "no such file", hint="check the path")
    if path.is_dir():
        raise InputError.single(
            name, "is a directory, not a file", hint="name a .yaml file inside it"
        )
    size = path.stat().st_size
    if size > max_bytes:
        raise InputError.single(
            name,
            f"file is {size / 1e6:.1f} MB; input files are limited to {max_bytes / 1e6:.0f} MB",
            hint="split it into several files",
        )
    try:
        with path.open("rb") as handle:
            # Read no more than the limit allows: a device or a pipe reports no size
            # (/dev/zero never ends: read whole, it runs the machine out of memory).
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InputError.single(name, f"cannot read: {exc.strerror}") from None
    if len(raw) > max_bytes:
        raise InputError.single(
            name,
            f"more than {max_bytes / 1e6:.0f} MB to read; input files are limited to that",
            hint="give a regular YAML file",
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1  # in bytes
        raise InputError.single(
            name,
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x})",
            line=line,
            column=column,
            hint="save the file as UTF-8",
        ) from None


class _Builder:
    def __init__(self, doc: Document, loader: _Loader) -> None:
        self.doc = doc
        self.loader = loader
        self.nodes = 0

    def build(self, node: yaml.Node, path: JsonPath, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self._fail(node, f"more than {MAX_NODES:,} values after expanding aliases", "alias")
        if depth > MAX_DEPTH:
            self._fail(node, f"nesting deeper than {MAX_DEPTH} levels", "depth")
        self.doc.value_marks.setdefault(path, _mark(node))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i), depth + 1) for i, item in enumerate(node.value)]
        assert isinstance(node, yaml.ScalarNode)
        value = self._scalar(node)
        if isinstance(value, dt.datetime | dt.date):
            return value.isoformat()
        if isinstance(value, bytes):
            self._fail(node, "binary values are not accepted", "value")
        if isinstance(value, float) and not math.isfinite(value):
            # No gpusolve quantity is NaN or infinite; catching it here covers every input kind.
            self._fail(node, f"{node.value} is not a finite number", "finite")
        return value

    def _mapping(self, node: yaml.MappingNode, path: JsonPath, depth: int) -> dict[str, Any]:
        own_keys = {id(k) for k, _ in node.value}
        try:
            self.loader.flatten_mapping(node)  # YAML merge keys (<<)
        except yaml.constructor.ConstructorError as exc:
            self._fail(node, f"bad merge key: {exc.problem}", "merge")
        result: dict[str, Any] = {}
        merged: set[str] = set()  # keys from `<<:` that the mapping's own keys may override
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self._fail(key_node, "mapping keys must be plain names", "key")
            key = str(self._scalar(key_node))
            child = (*path, key)
            if id(key_node) not in own_keys:
                merged.add(key)
            elif key in result and key not in merged:
                self._fail(key_node, f"key {key!r} appears twice in the same mapping", "key")
            self.doc.key_marks[child] = _mark(key_node)
            result[key] = self.build(value_node, child, depth + 1)
        return result

    def _scalar(self, node: yaml.Node) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            return self._fail(node, f"cannot read value: {exc.problem}", "value")
        except ValueError:  # Python converts at most 4,300 digits to an int
            return self._fail(node, f"a number of {len(node.value):,} characters", "long")

    def _fail(self, node: yaml.Node, message: str, kind: str) -> Any:
        line, col = _mark(node)
        hints = {
            "alias": "this looks like an alias bomb; expand anchors by hand",
            "depth": "flatten the structure",
            "key": "use each key once; keys are plain strings",
            "finite": "give a finite number",
            "long": "no figure has that many digits; give it in scientific notation, e.g. 1.5e12",
        }
        raise InputError.single(self.doc.name, message, line=line, column=col, hint=hints.get(kind))


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1
