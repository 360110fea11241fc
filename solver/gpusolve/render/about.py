"""What a memo says about itself, and the names it gives products.

A memo is mailed around: it carries the day it was made, the gpusolve version that made
it and the input files by name alone (a machine's folders, with user names and project
paths, stay out of it). It names products as people buy them ("NVIDIA HGX H20 8-GPU"),
not by catalogue id: the ids stay in the appendix, where a reader finds them to patch the
catalogue. The HTML report and the Markdown memo share these.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpusolve import __version__


@dataclass(frozen=True)
class About:
    """When a memo was made, by which version, from which files; catalogue id -> name."""

    made_on: str = ""  # ISO 8601 day
    version: str = ""
    inputs: tuple[str, ...] = ()  # as `shown_path` names them
    names: Mapping[str, str] = field(default_factory=dict)

    def line(self) -> str:
        """'Made on 2026-12-06 by gpusolve 0.1.0 from chat.yaml.'"""
        made = f"Made on {self.made_on} by gpusolve" if self.made_on else "Made by gpusolve"
        made += f" {self.version}" if self.version else ""
        return made + (f" from {', '.join(self.inputs)}" if self.inputs else "") + "."


def about(catalog: Any, inputs: Sequence[Path]) -> About:
    """The memo's provenance for a run over `catalog` (a `Catalog`) and its input files."""
    return About(
        made_on=made_on(),
        version=__version__,
        inputs=tuple(shown_path(p) for p in inputs),
        names=product_names(catalog),
    )


def shown_path(path: Path) -> str:
    """A file as a report names it: the shipped catalogue as `catalog/` (the same on every
    machine), any other file by its name alone."""
    from gpusolve.load.data import data_dir

    shipped = data_dir("catalog")
    if path.resolve() == shipped.resolve():
        return f"{shipped.name}/ (shipped with gpusolve)"
    return path.name


def made_on(now: datetime | None = None) -> str:
    """The report's date (UTC), or SOURCE_DATE_EPOCH's when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if now is None:
        now = datetime.fromtimestamp(int(epoch), UTC) if epoch.isdigit() else datetime.now(UTC)
    return now.date().isoformat()


def product_names(catalog: Any) -> dict[str, str]:
    """Catalogue id -> the product's name: cards, servers, switches, NICs, links, storage
    and PDUs by their `name`; a cloud offer as its provider and instance; a colocation offer
    as its provider and city."""
    names: dict[str, str] = {}
    for kind in ("cards", "servers", "storage", "switches", "nics", "links", "pdus"):
        for key, item in (getattr(catalog, kind, None) or {}).items():
            names[key] = item.name
    cards = getattr(catalog, "cards", {}) or {}
    for key, o in (getattr(catalog, "cloud_offers", None) or {}).items():
        card = cards[o.card].name if o.card in cards else o.card
        names[key] = f"{o.provider}, {o.gpus_per_instance} x {card} instance"
    for key, o in (getattr(catalog, "colo_offers", None) or {}).items():
        names[key] = f"{o.provider}, {o.city}"
    return names


def named(text: str, names: Mapping[str, str]) -> str:
    """`text` with every catalogue id in it replaced by the product's name. An id counts
    only whole: not inside a longer id or word (`h20` stays in `hgx-h20-8gpu`), the longest
    id first."""
    if not names or not text:
        return text
    ids = sorted((k for k in names if k and k in text), key=len, reverse=True)
    if not ids:
        return text
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, ids)) + r")(?![\w-])")
    return pattern.sub(lambda m: names[m[0]], text)
