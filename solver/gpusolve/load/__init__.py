"""The `load` stage: the only place that reads user files.

Everything returned is typed and checked; anything wrong raises `InputError` with
file:line:column and what to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gpusolve.errors import InputError, Problem
from gpusolve.load.catalog import LoadedCatalog, expand_paths, load_catalog
from gpusolve.load.data import data_dir
from gpusolve.load.inventory import inventory_problems
from gpusolve.load.validate import parse_model
from gpusolve.load.yamlio import Document, read_yaml
from gpusolve.models.catalog import Catalog
from gpusolve.models.regions import resolve, suggestions
from gpusolve.models.requirements import Measured, Requirements

if TYPE_CHECKING:  # `colo`'s input: its models are built only when a fleet is read
    from gpusolve.models.fleet import Fleet

__all__ = [
    "Document",
    "LoadedCatalog",
    "check_against_catalog",
    "check_fleet",
    "data_dir",
    "expand_paths",
    "load_catalog",
    "load_fleet",
    "load_requirements",
    "load_requirements_doc",
    "parse_model",
    "read_yaml",
]


def load_requirements_doc(path: Path) -> tuple[Requirements, Document]:
    doc = read_yaml(path)
    return parse_model(doc, Requirements, "requirements"), doc


def load_requirements(path: Path) -> Requirements:
    return load_requirements_doc(path)[0]


def load_fleet(path: Path) -> tuple[Fleet, Document]:
    from gpusolve.models.fleet import Fleet

    doc = read_yaml(path)
    return parse_model(doc, Fleet, "fleet"), doc


def preset_problems(reqs: Requirements, doc: Document) -> list[Problem]:
    """Model presets that gpusolve does not ship, located in the requirements file."""
    from gpusolve.estimate import UnknownPreset, resolve_arch

    problems = []
    for i, w in enumerate(reqs.workloads):
        try:
            resolve_arch(w.model)
        except UnknownPreset as exc:
            loc = doc.locate(("workloads", i, "model", "preset")) or (None, None)
            problems.append(Problem(doc.name, loc[0], loc[1], str(exc)))
    return problems


def check_fleet(fleet: Fleet, doc: Document, catalog: Catalog) -> None:
    """Every fleet line names a server in the catalogue; one currency per run."""
    problems = []
    for i, item in enumerate(fleet.servers):
        if item.server not in catalog.servers:
            loc = doc.locate(("servers", i, "server")) or (None, None)
            close = suggestions_for(item.server, list(catalog.servers))
            problems.append(
                Problem(doc.name, loc[0], loc[1], f"unknown server {item.server!r}", close)
            )
    problems += inventory_problems(fleet.owned, doc, catalog)
    problems += currency_problems(fleet.currency, doc, catalog)
    # An unknown region is an input error here, not "no colocation offer can host" (exit 1).
    problems += region_problems(doc, catalog, [(("regions",), fleet.regions)])
    if problems:
        raise InputError(problems)


def currency_problems(currency: str, doc: Document, catalog: Catalog) -> list[Problem]:
    """The file's currency against the catalogue's: one currency per run."""
    if currency == catalog.currency:
        return []
    loc = doc.locate(("currency",)) or (None, None)
    message = f"currency {currency} differs from the catalogue's {catalog.currency}"
    hint = "use one currency per run (give a catalogue priced in the same currency)"
    return [Problem(doc.name, loc[0], loc[1], message, hint)]


RegionList = tuple[tuple[str | int, ...], list[str] | None]  # where it is written, its terms


def region_problems(doc: Document, catalog: Catalog, lists: list[RegionList]) -> list[Problem]:
    """Region or city names that match no offer's region, each at its line."""
    known = frozenset(o.region for o in catalog.colo_offers.values()) | frozenset(
        o.region for o in catalog.cloud_offers.values()
    )
    problems = []
    for base, terms in lists:
        for j, term in enumerate(terms or []):
            if resolve(term, known) is None:
                loc = doc.locate((*base, j)) or (None, None)
                close = suggestions(term, known)
                hint = f"did you mean {', '.join(close)}?" if close else "use a region or city name"
                problems.append(
                    Problem(doc.name, loc[0], loc[1], f"unknown region or city {term!r}", hint)
                )
    return problems


def suggestions_for(word: str, known: list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, known, n=3)
    return f"did you mean {', '.join(close)}?" if close else "see `gpusolve catalog list`"


def check_against_catalog(reqs: Requirements, doc: Document, catalog: Catalog) -> None:
    """Cross-file checks: one currency per run, region names that exist, known cards."""
    problems: list[Problem] = []
    problems += currency_problems(reqs.currency, doc, catalog)
    region_lists: list[RegionList] = [
        (("regions", "allowed"), reqs.regions.allowed),
        (("regions", "preferred"), reqs.regions.preferred),
    ]
    region_lists += [(("workloads", i, "regions"), w.regions) for i, w in enumerate(reqs.workloads)]
    problems += region_problems(doc, catalog, region_lists)
    problems += preset_problems(reqs, doc)
    problems += inventory_problems(reqs.owned, doc, catalog)
    if reqs.scenarios:
        from gpusolve.load.scenarios import scenario_problems

        problems += scenario_problems(reqs, catalog, doc)
    for i, w in enumerate(reqs.workloads):
        if w.measured_run is not None and w.measured_run.card not in catalog.cards:
            loc = doc.locate(("workloads", i, "measured", "card")) or (None, None)
            problems.append(
                Problem(
                    doc.name,
                    loc[0],
                    loc[1],
                    f"measured.card {w.measured_run.card!r} is not in the catalogue",
                    "use a card id from `gpusolve catalog list --kind cards`",
                )
            )
    from gpusolve.load.measured import measured_problems

    problems += measured_problems(reqs, doc, catalog)
    for j, item in enumerate(reqs.allow_restricted):
        if item not in catalog.cards and item not in catalog.servers:
            loc = doc.locate(("allow_restricted", j)) or (None, None)
            hint = suggestions_for(item, [*catalog.cards, *catalog.servers])
            problems.append(
                Problem(
                    doc.name,
                    loc[0],
                    loc[1],
                    f"allow_restricted: unknown card or server {item!r}",
                    hint,
                )
            )
    if problems:
        raise InputError(problems)
    for i, w in enumerate(reqs.workloads):
        if w.measured_run is not None:
            w.measured_run.bind_card(catalog.cards[w.measured_run.card])
            if w.measured_run.profile is not None:
                w.measured_run.attach_profile(measured_profile(w.measured_run, doc, i))


def measured_profile(m: Measured, doc: Document, index: int) -> tuple[str, ...]:
    """Read the measured run's nvidia-smi log (a path relative to the requirements file) and
    say what bounded the run (H11) and what it warned about."""
    from gpusolve.models.params import Params
    from gpusolve.profile import analyse_file

    assert m.profile is not None
    path = Path(m.profile)
    if not path.is_absolute():
        path = doc.path.parent / path
    if not path.is_file():
        loc = doc.locate(("workloads", index, "measured", "profile")) or (None, None)
        raise InputError(
            [
                Problem(
                    doc.name,
                    loc[0],
                    loc[1],
                    f"measured.profile {m.profile!r} does not exist",
                    "give the nvidia-smi log's path, relative to this file",
                )
            ]
        )
    report = analyse_file(path, m.bound_card, Params())
    o = report.overall
    notes = [f"the measured run's log {m.profile}: {o.bound.replace('_', '-')}; {o.why}"]
    if o.bound == "stalled":
        notes.append(
            "the measured MFU includes input or communication stalls: fixing them would raise "
            "it, and every card's estimate with it"
        )
    notes += [f"the measured run's log: {w}" for w in report.warnings]
    return tuple(notes)
