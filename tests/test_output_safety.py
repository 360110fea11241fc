"""Outputs safe for their readers: catalogue text that a spreadsheet would run as a
formula, a markdown viewer as HTML, or a terminal as control sequences reaches none of
them as such. Hostile catalogue text is patched into the offer the plan rents and run
through the real command line."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.support.fuzz import EXAMPLES

from gpusolve.errors import printable
from gpusolve.render.bom_tables import spreadsheet_cell
from gpusolve.render.fmt import markdown_safe

Run = Callable[..., Any]
FINETUNE = str(EXAMPLES / "finetune-7b-deadline.yaml")
# The fine-tune rents this offer (its price source reaches the BOM, the memo's sources and
# the text's source list).
RENTED = "cloud-8x-h800-shanghai"
HOSTILE_SOURCE = (
    '=HYPERLINK("http://evil") <img src=x onerror=alert(1)> <script>alert(2)</script> '
    "\x1b]0;pwned\x07 \x1b[31mred \x9b2J end"
)


@pytest.fixture
def hostile_catalog(tmp_path: Path) -> str:
    source = HOSTILE_SOURCE.replace("\\", "\\\\").replace('"', '\\"')
    source = source.replace("\x1b", "\\e").replace("\x07", "\\a").replace("\x9b", "\\x9b")
    path = tmp_path / "hostile.yaml"
    path.write_text(
        f'currency: CNY\npatch:\n  - id: {RENTED}\n    pricing:\n      source: "{source}"\n',
        encoding="utf-8",
    )
    return str(path)


def plan(gpusolve: Run, catalog: str, *args: str) -> Any:
    result = gpusolve("plan", "-q", FINETUNE, "--catalog", catalog, "--time-limit", "5", *args)
    assert result.code == 0, result.err
    return result


# --- spreadsheets ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "shown"),
    [
        ("=1+1", "'=1+1"),
        ("+1 cmd", "'+1 cmd"),
        ("-cmd|' /C calc'!A0", "'-cmd|' /C calc'!A0"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("-5", "-5"),  # a genuine negative number stays a number
        ("-0.25", "-0.25"),
        ("-1e3", "-1e3"),
        ("a=b", "a=b"),
        ("", ""),
    ],
)
def test_a_cell_that_starts_a_formula_gets_an_apostrophe(cell: str, shown: str) -> None:
    assert spreadsheet_cell(cell) == shown


def test_the_bom_csv_carries_no_formula(gpusolve: Run, hostile_catalog: str) -> None:
    out = plan(gpusolve, hostile_catalog, "--bom", "--format", "csv").out
    rows = list(csv.DictReader(io.StringIO(out)))
    rented = [r for r in rows if r["item"] == RENTED]
    assert rented, out
    assert rented[0]["source"].startswith("'=HYPERLINK(")
    for row in rows:
        for cell in row.values():
            assert not cell.startswith(("=", "+", "@", "\t", "\r")), row
            assert not cell.startswith("-") or cell.lstrip("-").replace(".", "").isdigit()


# --- markdown -------------------------------------------------------------------------


def test_markdown_safe_escapes_what_opens_a_tag_only() -> None:
    assert markdown_safe("<script>x</script> a < b <!-- c --> `<b>`") == (
        "&lt;script>x&lt;/script> a < b &lt;!-- c --> `&lt;b>`"
    )


@pytest.mark.parametrize("args", [("--format", "markdown"), ("--bom", "--format", "markdown")])
def test_the_memo_shows_catalogue_html_as_text(
    gpusolve: Run, hostile_catalog: str, args: tuple[str, ...]
) -> None:
    out = plan(gpusolve, hostile_catalog, *args).out
    assert "onerror=alert(1)" in out  # the text is kept...
    assert "<img" not in out and "<script" not in out  # ...but is never a tag
    assert "&lt;img src=x onerror=alert(1)>" in out


# --- terminals ------------------------------------------------------------------------


def test_printable_keeps_text_tabs_and_newlines_only() -> None:
    assert printable("a\tb\nc\x1b]0;t\x07d\x1b[31me\x9b2Jf\x7fg\rh\x00") == "a\tb\nc]0;td[31me2Jfgh"


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "yaml"])
def test_no_control_character_reaches_the_terminal(
    gpusolve: Run, hostile_catalog: str, fmt: str
) -> None:
    result = plan(gpusolve, hostile_catalog, "--format", fmt)
    for stream in (result.out, result.err):
        assert not any(ord(c) < 32 and c not in "\n\t" for c in stream), repr(stream[:200])
        assert not any(0x7F <= ord(c) <= 0x9F for c in stream), repr(stream[:200])
    if fmt == "text":
        assert "]0;pwned" in result.out  # the words stay; the sequences do not


def test_catalogue_show_prints_no_control_character(gpusolve: Run, hostile_catalog: str):
    result = gpusolve("catalog", "show", RENTED, "--catalog", hostile_catalog)
    assert result.code == 0, result.err
    assert "\x1b" not in result.out and "\x9b" not in result.out and "\x07" not in result.out
    assert "]0;pwned" in result.out
