"""Parsed YAML documents kept between runs of the command (`load/document_cache.py`): a run
reads back the values and marks an earlier run parsed from the same text with the same
code, parses again for anything else (an edited file, an edited parser, an unreadable
cache file), never keeps a file with an error, and outside the command never touches the
disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpusolve.errors import InputError
from gpusolve.load import document_cache, yamlio
from gpusolve.load.yamlio import read_yaml

TEXT = "name: a\nitems:\n  - id: x\n    memory_gb: 80\n  - id: y\n    memory_gb: 3e9\n"


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache directory, and nothing of another test's run left to save."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    document_cache._new.clear()
    yield tmp_path / "cache" / "gpusolve" / "documents"
    document_cache._new.clear()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file actually parsed."""
    seen: list[Path] = []
    real = yamlio._parse

    def counted(path: Path, text: str) -> yamlio.Document:
        seen.append(path)
        return real(path, text)

    monkeypatch.setattr(yamlio, "_parse", counted)
    return seen


def _next_run() -> None:
    """What ends one process and starts the next: the documents written, none in memory."""
    document_cache.save()
    document_cache._new.clear()


def _file(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_outside_the_command_nothing_is_kept(
    tmp_path: Path, cache_home: Path, parses: list[Path]
) -> None:
    path = _file(tmp_path, "a.yaml", TEXT)
    read_yaml(path)
    _next_run()
    read_yaml(path)
    assert len(parses) == 2 and not cache_home.exists()


def test_a_later_run_reads_the_same_document(
    tmp_path: Path, cache_home: Path, parses: list[Path]
) -> None:
    path = _file(tmp_path, "a.yaml", TEXT)
    with document_cache.kept_between_runs():
        first = read_yaml(path)
        _next_run()
        assert len(list(cache_home.iterdir())) == 1
        again = read_yaml(path)
    assert parses == [path]  # read back, not parsed
    assert again.data == {
        "name": "a",
        "items": [{"id": "x", "memory_gb": 80}, {"id": "y", "memory_gb": 3e9}],
    }
    assert again.data == first.data and again.data is not first.data
    assert again.value_marks == first.value_marks and again.key_marks == first.key_marks
    # `80` of the first item is on line 4 at column 16, as an editor counts.
    assert again.locate(("items", 0, "memory_gb")) == (4, 16)
    assert again.locate(("items", 1, "id"), key=True) == (5, 5)


def test_the_same_text_elsewhere_keeps_its_own_path(
    tmp_path: Path, cache_home: Path, parses: list[Path]
) -> None:
    first = _file(tmp_path, "a.yaml", TEXT)
    (tmp_path / "other").mkdir()
    second = _file(tmp_path / "other", "b.yaml", TEXT)
    with document_cache.kept_between_runs():
        read_yaml(first)
        _next_run()
        doc = read_yaml(second)
    assert parses == [first] and doc.path == second and doc.name == str(second)


def test_an_edited_file_is_parsed_again(
    tmp_path: Path, cache_home: Path, parses: list[Path]
) -> None:
    path = _file(tmp_path, "a.yaml", TEXT)
    with document_cache.kept_between_runs():
        read_yaml(path)
        _next_run()
        path.write_text(TEXT.replace("80", "96"), encoding="utf-8")
        doc = read_yaml(path)
    assert len(parses) == 2 and doc.data["items"][0]["memory_gb"] == 96


def test_an_edited_parser_is_a_new_key(
    tmp_path: Path, cache_home: Path, parses: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path, "a.yaml", TEXT)
    with document_cache.kept_between_runs():
        read_yaml(path)
        _next_run()
        monkeypatch.setattr(document_cache, "code_fingerprint", lambda: "another parser")
        read_yaml(path)
    assert len(parses) == 2


def test_a_file_with_an_error_is_never_kept(
    tmp_path: Path, cache_home: Path, parses: list[Path]
) -> None:
    path = _file(tmp_path, "bad.yaml", "a: 1\na: 2\n")
    with document_cache.kept_between_runs():
        for _ in range(2):
            with pytest.raises(InputError) as caught:
                read_yaml(path)
            assert caught.value.problems[0].line == 2
            _next_run()
    assert len(parses) == 2 and not (cache_home.exists() and any(cache_home.iterdir()))


def test_a_foreign_or_truncated_file_is_a_miss(
    tmp_path: Path, cache_home: Path, parses: list[Path]
) -> None:
    path = _file(tmp_path, "a.yaml", TEXT)
    with document_cache.kept_between_runs():
        first = read_yaml(path)
        _next_run()
        (kept,) = cache_home.iterdir()
        for junk in (b"not a pickle", kept.read_bytes()[:20]):
            kept.write_bytes(junk)
            assert read_yaml(path).data == first.data
            document_cache._new.clear()
    assert len(parses) == 3
