"""The `measured:` block as YAML text, and writing it into a requirements file in place.

The file is edited as text (comments and layout survive): the workload's existing `measured:`
entry (block or flow style) is replaced, else the block is appended after the workload's last
line at the indentation of its keys. The result is parsed and validated before it replaces
the file (atomically, gpusolve.atomic)."""

from __future__ import annotations

from gpusolve.load.yamlio import Document
from gpusolve.models.requirements import Measured


def block_lines(m: Measured, indent: int) -> list[str]:
    """`measured:` and its fields (the ones set), at `indent` spaces."""
    pad = " " * indent
    lines = [f"{pad}measured:"]
    for key, value in m.model_dump(exclude_none=True).items():
        text = f"{value:g}" if isinstance(value, float) else str(value)
        lines.append(f"{pad}  {key}: {text}")
    return lines


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_content(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith("#")


def with_block(text: str, doc: Document, index: int, m: Measured) -> str:
    """`text` with workload `index`'s measured block set to `m`."""
    lines = text.splitlines()
    name_at = doc.locate(("workloads", index, "name"), key=True)
    if name_at is None:
        raise ValueError("workload not found in the file")
    key_col = name_at[1] - 1  # 0-based column of the workload's keys
    existing = doc.key_marks.get(("workloads", index, "measured"))
    if existing is not None:
        start = existing[0] - 1
        end = start + 1
        while end < len(lines) and (not _is_content(lines[end]) or _indent(lines[end]) > key_col):
            end += 1
        while end > start + 1 and not _is_content(lines[end - 1]):
            end -= 1
        return _join(lines[:start] + block_lines(m, key_col) + lines[end:], text)
    first = name_at[0] - 1
    end = first + 1
    while end < len(lines):
        line = lines[end]
        item = _indent(line) == key_col - 2 and line.lstrip().startswith("- ")
        if _is_content(line) and (_indent(line) < key_col or item):
            break
        end += 1
    while end > first + 1 and not _is_content(lines[end - 1]):
        end -= 1
    return _join(lines[:end] + block_lines(m, key_col) + lines[end:], text)


def _join(lines: list[str], original: str) -> str:
    return "\n".join(lines) + ("\n" if original.endswith("\n") else "")
