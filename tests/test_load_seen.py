"""Documents seen valid skip the schema pass; nothing else changes (load/seen.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

import gpusolve.load.seen as seen
import gpusolve.load.validate as validate
from gpusolve.errors import InputError
from gpusolve.load import load_requirements

GOOD = """\
workloads:
  - name: chat
    kind: inference
    model: {preset: llama-3-8b}
    concurrency: 32
    target_tokens_per_s: 1500
"""
# `concurrency` is a whole number: text there is a schema error, located at its line.
BAD = GOOD.replace("concurrency: 32", "concurrency: many")


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(seen, "VALID", seen._Seen())
    monkeypatch.setattr(validate, "VALID", seen.VALID)
    return tmp_path / "cache" / "gpusolve" / "valid-documents.txt"


def _count_schema_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    passes: list[int] = []
    real = validate._leaf_errors

    def counting(errors, root):  # type: ignore[no-untyped-def]
        passes.append(1)
        return real(errors, root)

    monkeypatch.setattr(validate, "_leaf_errors", counting)
    return passes


def test_a_valid_document_is_checked_once_then_remembered(
    tmp_path: Path, fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = _count_schema_passes(monkeypatch)
    path = tmp_path / "reqs.yaml"
    path.write_text(GOOD)
    first = load_requirements(path)
    second = load_requirements(path)
    assert first == second
    assert len(passes) == 1
    seen.VALID.save()
    assert len(fresh_cache.read_text().split()) == 1


def test_an_edited_document_is_checked_again(
    tmp_path: Path, fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = _count_schema_passes(monkeypatch)
    path = tmp_path / "reqs.yaml"
    path.write_text(GOOD)
    load_requirements(path)
    path.write_text(GOOD.replace("concurrency: 32", "concurrency: 33"))
    load_requirements(path)
    assert len(passes) == 2


def test_an_invalid_document_is_never_remembered_and_always_located(
    tmp_path: Path, fresh_cache: Path
) -> None:
    path = tmp_path / "reqs.yaml"
    path.write_text(BAD)
    line = BAD.splitlines().index("    concurrency: many") + 1
    for _ in range(2):
        with pytest.raises(InputError) as err:
            load_requirements(path)
        assert any(p.line == line for p in err.value.problems)
    seen.VALID.save()
    assert not fresh_cache.exists()


def test_a_damaged_cache_file_is_an_empty_cache(
    tmp_path: Path, fresh_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh_cache.parent.mkdir(parents=True)
    fresh_cache.write_bytes(b"\xff\xfe not digests\n" + b"z" * 64 + b"\n")
    passes = _count_schema_passes(monkeypatch)
    path = tmp_path / "reqs.yaml"
    path.write_text(GOOD)
    load_requirements(path)
    assert len(passes) == 1
