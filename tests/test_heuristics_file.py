"""The shipped heuristics catalogue (rules/heuristics.yaml) is complete, valid and our own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpusolve.models.rules import HeuristicsFile

REPO = Path(__file__).resolve().parents[1]
HEURISTICS_YAML = REPO / "rules" / "heuristics.yaml"
# The project brief's numbered list; present in a development checkout, absent elsewhere.
SHARED_HEURISTICS_MD = Path(__file__).resolve().parents[2] / "shared" / "HEURISTICS.md"

EXPECTED_IDS = [f"H{n:02d}" for n in range(1, 45)]

# Corrections that must exist, and the corrected figure each must state.
REQUIRED_CORRECTIONS: dict[str, tuple[str, ...]] = {
    "H16": ("84",),
    "H22": ("2.2",),
    "H28": ("56",),
    "H31": ("1,555", "1555"),
}


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    data = yaml.safe_load(HEURISTICS_YAML.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def catalogue(raw: dict[str, Any]) -> HeuristicsFile:
    return HeuristicsFile.model_validate(raw)


def test_first_line_points_at_schema() -> None:
    first = HEURISTICS_YAML.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../schemas/heuristics.schema.json"


def test_ids_are_h01_to_h44_in_order(catalogue: HeuristicsFile) -> None:
    assert [h.id for h in catalogue.heuristics] == EXPECTED_IDS


def test_summaries_are_substantial(catalogue: HeuristicsFile) -> None:
    short = [h.id for h in catalogue.heuristics if len(h.summary.strip()) < 40]
    assert short == []


def test_both_documents_titled_and_cited(catalogue: HeuristicsFile) -> None:
    assert set(catalogue.documents) == {"A", "B"}
    for title in catalogue.documents.values():
        assert title.strip()
    assert {h.document for h in catalogue.heuristics} == {"A", "B"}


def test_sections_are_given(catalogue: HeuristicsFile) -> None:
    assert all(h.section.strip() for h in catalogue.heuristics)


@pytest.mark.parametrize(("hid", "figures"), sorted(REQUIRED_CORRECTIONS.items()))
def test_required_corrections_state_the_corrected_figure(
    catalogue: HeuristicsFile, hid: str, figures: tuple[str, ...]
) -> None:
    by_id = {h.id: h for h in catalogue.heuristics}
    correction = by_id[hid].correction
    assert correction, f"{hid} needs a correction"
    assert any(figure in correction for figure in figures), (hid, figures, correction)


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("**", "")).strip().casefold()


def _bullets(markdown: str) -> dict[str, str]:
    """Map Hnn -> the text of its bullet in HEURISTICS.md (continuation lines included)."""
    bullets: dict[str, str] = {}
    current: str | None = None
    for line in markdown.splitlines():
        match = re.match(r"^- \*\*(H\d\d)\*\* \([^)]*\)\s*(.*)$", line)
        if match:
            current = match.group(1)
            bullets[current] = match.group(2)
        elif current and (line.startswith(("- ", "#")) or not line.strip()):
            current = None
        elif current:
            bullets[current] += " " + line.strip()
    return bullets


@pytest.mark.skipif(
    not SHARED_HEURISTICS_MD.is_file(), reason="../shared/HEURISTICS.md is not available"
)
def test_summaries_are_not_copied_from_heuristics_md(catalogue: HeuristicsFile) -> None:
    bullets = _bullets(SHARED_HEURISTICS_MD.read_text(encoding="utf-8"))
    assert sorted(bullets) == EXPECTED_IDS
    copied: list[str] = []
    for heuristic in catalogue.heuristics:
        summary = _normalise(heuristic.summary)
        bullet = _normalise(bullets[heuristic.id])
        if summary == bullet or bullet in summary:
            copied.append(f"{heuristic.id}: whole bullet")
            continue
        # No sentence of the bullet (of any length worth paraphrasing) reappears verbatim.
        for sentence in re.split(r"(?<=[.;:])\s+", bullet):
            sentence = sentence.strip(" .;:")
            if len(sentence) >= 40 and sentence in summary:
                copied.append(f"{heuristic.id}: {sentence!r}")
    assert copied == []
