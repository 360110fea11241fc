"""The finance terms file (catalog/finance/terms.yaml): payment terms, financing and
upkeep for the cash view. Read once per process; a broken file is a located InputError."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from gpusolve.load.data import data_dir
from gpusolve.load.validate import parse_model
from gpusolve.load.yamlio import read_yaml
from gpusolve.models.money import FinanceTerms

TERMS_FILE = Path("finance") / "terms.yaml"


def terms_path() -> Path:
    return data_dir("catalog") / TERMS_FILE


@cache
def load_terms(path: Path | None = None) -> FinanceTerms:
    """The terms at `path`, or the shipped ones."""
    return parse_model(read_yaml(path or terms_path()), FinanceTerms, "finance")
