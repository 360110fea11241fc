"""Read and merge catalogue files; check references and physics across files."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gpusolve.errors import InputError, Problem
from gpusolve.load.data import data_dir
from gpusolve.load.validate import error_path, parse_model, pydantic_message
from gpusolve.load.yamlio import Document, read_yaml
from gpusolve.models.catalog import (
    PART_KINDS,
    Card,
    Catalog,
    CatalogFile,
    CloudOffer,
    ColoOffer,
    ItemPatch,
    NetworkLink,
    NetworkNic,
    NetworkSwitch,
    RackPdu,
    Server,
    StorageNode,
)
from gpusolve.models.plan import PatchRef, SourceRef

KINDS = ("cards", "servers", "colo_offers", "cloud_offers", *PART_KINDS)
# No single server draws more: the densest 8-GPU boards are ~15 kW, a whole GB200 NVL72
# rack ~130 kW. A "server" above this is a typo (W written as kW, a rack entered as a node).
MAX_SERVER_KW = 40.0
MAX_RACK_KW = 250.0
# The smallest positive figure a catalogue item may hold, in any of its units. The shipped
# catalogue's smallest is 0.5 (GB/s, kW, CNY per kWh); a thousandth is a tenth of a fen, a
# watt in kW, a megabyte in GB. Below it a price or a capacity is a slip (a 1e-300 price
# would be taken as free, a 1e-300 capacity as present); 0 stays as written.
MIN_FIGURE = 1e-3
_MODELS: dict[str, type[BaseModel]] = {
    "cards": Card,
    "servers": Server,
    "colo_offers": ColoOffer,
    "cloud_offers": CloudOffer,
    "switches": NetworkSwitch,
    "nics": NetworkNic,
    "links": NetworkLink,
    "storage": StorageNode,
    "pdus": RackPdu,
}


@dataclass
class _Origin:
    doc: Document
    index: int
    kind: str

    def where(self) -> tuple[int | None, int | None]:
        loc = self.doc.locate((self.kind, self.index))
        return loc if loc else (None, None)


@dataclass(frozen=True)
class _Written:
    """Where a patch wrote one field: its document and the field's path in it."""

    doc: Document
    path: tuple[str | int, ...]


@dataclass(frozen=True)
class PatchRecord:
    """One `patch:` entry applied to an item: where it is written and what it changed."""

    at: str  # file:line
    fields: tuple[str, ...]


@dataclass
class LoadedCatalog:
    catalog: Catalog
    files: list[Path]
    origins: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # id -> (file, line)
    patches: dict[str, list[PatchRecord]] = field(default_factory=dict)  # id -> in order applied

    def kind_of(self, item_id: str) -> str | None:
        return next((k for k in KINDS if item_id in getattr(self.catalog, k)), None)

    def defined_at(self, item_id: str) -> str:
        file, line = self.origins.get(item_id, ("?", None))
        file = shown_name(file)
        return f"{file}:{line}" if line is not None else file

    def counts(self) -> dict[str, int]:
        return {k: len(getattr(self.catalog, k)) for k in KINDS}


def shown_name(file: str) -> str:
    """A shipped file as `catalog/cards.yaml` (the same on every machine); others as given."""
    shipped = data_dir("catalog")
    path = Path(file)
    if path.is_absolute() and path.is_relative_to(shipped):
        return str(Path(shipped.name) / path.relative_to(shipped))
    return file


def expand_paths(paths: Sequence[Path], *, what: str) -> list[Path]:
    """Files stay as given; a folder means its *.yaml/*.yml files in name order."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
            found = [f for f in found if f.name != "heuristics.yaml"]
            if not found:
                raise InputError.single(str(path), f"folder holds no {what} .yaml files")
            files.extend(found)
        else:
            files.append(path)
    return files


def load_catalog(paths: Sequence[Path] | None = None) -> LoadedCatalog:
    files = expand_paths(list(paths) if paths else [data_dir("catalog")], what="catalogue")
    merged: dict[str, dict[str, Any]] = {k: {} for k in KINDS}
    origins: dict[str, _Origin] = {}
    patches: dict[str, list[PatchRecord]] = {}
    patched: dict[tuple[str, str], _Written] = {}  # (id, field) -> the patch that set it last
    currency: tuple[str, Document] | None = None
    problems: list[Problem] = []
    for path in files:
        doc = read_yaml(path)
        part = parse_model(doc, CatalogFile, "catalog")
        if currency is None:
            currency = (part.currency, doc)
        elif part.currency != currency[0]:
            line = _line(doc, ("currency",))
            problems.append(
                Problem(
                    doc.name,
                    line,
                    None,
                    f"currency {part.currency} differs from {currency[0]} in {currency[1].name}",
                    "use one currency per run; convert prices before merging files",
                )
            )
        for kind in KINDS:
            for index, item in enumerate(getattr(part, kind)):
                origin = _Origin(doc, index, kind)
                problems.extend(_merge_one(merged, origins, kind, item, origin, part.replace))
                if origins.get(item.id) is origin:  # a whole replacement drops earlier patches
                    patches.pop(item.id, None)
                    patched = {k: w for k, w in patched.items() if k[0] != item.id}
        problems.extend(_patched_twice(doc, part.patch))
        for index, item_patch in enumerate(part.patch):
            problems.extend(_apply_patch(merged, origins, patches, doc, index, item_patch))
            if item_patch.id in patches:
                for name in item_patch.model_extra or {}:
                    patched[(item_patch.id, name)] = _Written(doc, ("patch", index, name))
    if problems:
        raise InputError(problems)
    catalog = Catalog(
        currency=currency[0] if currency else "CNY",
        **{k: merged[k] for k in KINDS},
    )
    problems = _cross_check(catalog, origins, patched)
    if problems:
        raise InputError(problems)
    return LoadedCatalog(
        catalog=catalog,
        files=files,
        origins={i: (o.doc.name, o.where()[0]) for i, o in origins.items()},
        patches=patches,
    )


def _merge_one(
    merged: dict[str, dict[str, Any]],
    origins: dict[str, _Origin],
    kind: str,
    item: Any,
    origin: _Origin,
    replace: bool,
) -> list[Problem]:
    item_id = item.id
    previous = origins.get(item_id)
    if previous is not None:
        prev_line = previous.where()[0]
        same_kind = previous.kind == kind
        # `replace: true` restates items of earlier files; one file defining an id twice
        # is a slip whichever way it is read (else the second silently wins).
        same_file = previous.doc is origin.doc
        if not (same_kind and replace) or same_file:
            line, col = origin.where()
            hint = (
                "ids are shared by all kinds; rename one"
                if not same_kind
                else "define each id once per file (`replace: true` restates items of other files)"
                if same_file
                else "to change some of its fields list them under `patch:` (with `id:`); to "
                "restate the whole item set `replace: true` at the top of this file; to use "
                "only your files pass --no-default-catalog"
            )
            return [
                Problem(
                    origin.doc.name,
                    line,
                    col,
                    f"duplicate id {item_id!r}: already defined in "
                    f"{previous.doc.name}:{prev_line} ({previous.kind})",
                    hint,
                )
            ]
    merged[kind][item_id] = item
    origins[item_id] = origin
    return []


def _patched_twice(doc: Document, entries: Sequence[ItemPatch]) -> list[Problem]:
    """A second `patch:` entry for an id in the same file: which of two values for one field
    was meant cannot be told (the later would silently win)."""
    first: dict[str, int] = {}
    problems = []
    for index, entry in enumerate(entries):
        if entry.id not in first:
            first[entry.id] = index
            continue
        line, col = doc.locate(("patch", index, "id")) or (None, None)
        earlier = (doc.locate(("patch", first[entry.id])) or (None, None))[0]
        problems.append(
            Problem(
                doc.name,
                line,
                col,
                f"{entry.id!r} is patched twice in this file (first at line {earlier})",
                "give one patch entry per id with all the fields it changes",
            )
        )
    return problems


def _apply_patch(
    merged: dict[str, dict[str, Any]],
    origins: dict[str, _Origin],
    patches: dict[str, list[PatchRecord]],
    doc: Document,
    index: int,
    item_patch: ItemPatch,
) -> list[Problem]:
    """Merge one `patch:` entry into the item it names; the result is validated whole."""
    base_path: tuple[str | int, ...] = ("patch", index)
    line, col = doc.locate(base_path) or (None, None)
    item_id = item_patch.id
    origin = origins.get(item_id)
    if origin is None:
        close = difflib.get_close_matches(item_id, list(origins), n=3)
        hint = f"did you mean {', '.join(close)}?" if close else "see `gpusolve catalog list`"
        return [
            Problem(
                doc.name,
                line,
                col,
                f"patch for unknown id {item_id!r}: a patch changes an item defined earlier",
                f"{hint} (to add a new item, list it under its kind instead)",
            )
        ]
    model = _MODELS[origin.kind]
    changes = dict(item_patch.model_extra or {})
    unknown = sorted(k for k in changes if k not in model.model_fields)
    if unknown or not changes:
        where = doc.locate((*base_path, unknown[0]), key=True) if unknown else None
        at = where or (line, col)
        what = (
            f"unknown field {unknown[0]!r} for a {origin.kind[:-1].replace('_', ' ')}"
            if unknown
            else f"patch for {item_id!r} changes nothing"
        )
        return [
            Problem(
                doc.name,
                at[0],
                at[1],
                what,
                f"expected one of: {', '.join(sorted(k for k in model.model_fields if k != 'id'))}",
            )
        ]
    current = merged[origin.kind][item_id]
    data = deep_merge(current.model_dump(by_alias=True), changes)
    try:
        merged[origin.kind][item_id] = model.model_validate(data)
    except ValidationError as exc:
        return [_patch_problem(doc, base_path, item_id, err) for err in exc.errors()]
    patches.setdefault(item_id, []).append(
        PatchRecord(
            f"{shown_name(doc.name)}:{line}" if line is not None else doc.name, tuple(changes)
        )
    )
    return []


def deep_merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` laid over it: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in changes.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = deep_merge(old, value)
        else:
            out[key] = value
    return out


def _patch_problem(
    doc: Document, base_path: tuple[str | int, ...], item_id: str, err: Any
) -> Problem:
    loc = tuple(p for p in (*err["loc"], *error_path(err)) if isinstance(p, str | int))
    line, col = doc.locate((*base_path, *loc)) or (None, None)
    field_name = ".".join(str(p) for p in loc) or "(item)"
    message, expected = pydantic_message(err)
    hint = "the patched item must still be a valid whole item"
    return Problem(
        doc.name,
        line,
        col,
        f"patch for {item_id!r}: {field_name}: {message}",
        f"{expected}; {hint}" if expected else hint,
    )


def _cross_check(
    catalog: Catalog, origins: dict[str, _Origin], patched: dict[tuple[str, str], _Written]
) -> list[Problem]:
    problems: list[Problem] = []

    def problem(item_id: str, field_path: FieldPath, message: str, hint: str) -> None:
        # Blamed where the figure was last written: the patch that set it, if one did
        # (an unknown card set by a `patch:` is the patch's, not the shipped definition's).
        written = patched.get((item_id, str(field_path[0])))
        if written is not None:
            at = written.doc.locate(written.path) or (None, None)
            problems.append(Problem(written.doc.name, at[0], at[1], message, hint))
            return
        o = origins[item_id]
        loc = o.doc.locate((o.kind, o.index, *field_path)) or o.where()
        problems.append(Problem(o.doc.name, loc[0], loc[1], message, hint))

    card_ids = sorted(catalog.cards)
    for server in catalog.servers.values():
        card = catalog.cards.get(server.card)
        if card is None:
            problem(
                server.id,
                ("card",),
                f"server {server.id!r} names unknown card {server.card!r}",
                f"known cards: {', '.join(card_ids) or '(none)'}",
            )
            continue
        gpu_kw = server.gpus * card.tdp_w / 1000
        if server.power_kw < gpu_kw:
            problem(
                server.id,
                ("power_kw",),
                f"server {server.id!r} draws {server.power_kw} kW, less than its "
                f"{server.gpus} GPUs' TDP alone ({gpu_kw:.2f} kW)",
                "give the peak wall power in kW",
            )
        if server.power_kw > MAX_SERVER_KW:
            problem(
                server.id,
                ("power_kw",),
                f"server {server.id!r} draws {server.power_kw} kW; no rack could hold one "
                f"server above {MAX_SERVER_KW:.0f} kW",
                "was the figure in W, or for a whole rack?",
            )
    for offer in catalog.cloud_offers.values():
        if offer.card not in catalog.cards:
            problem(
                offer.id,
                ("card",),
                f"cloud offer {offer.id!r} names unknown card {offer.card!r}",
                f"known cards: {', '.join(card_ids) or '(none)'}",
            )
    for kind in KINDS:
        for item_id, item in getattr(catalog, kind).items():
            for field_path, value in _tiny_figures(item.model_dump(by_alias=True)):
                problem(
                    item_id,
                    field_path,
                    f"{kind[:-1].replace('_', ' ')} {item_id!r}: {_dotted(field_path)} is "
                    f"{value:g}, below the smallest figure a catalogue holds ({MIN_FIGURE:g})",
                    "check the unit; write 0 if it is none",
                )
    for colo in catalog.colo_offers.values():
        if colo.rack_kw > MAX_RACK_KW:
            problem(
                colo.id,
                ("rack_kw",),
                f"colo offer {colo.id!r} has {colo.rack_kw} kW per rack, above any real rack "
                f"({MAX_RACK_KW:.0f} kW)",
                "give the contracted kW of one rack",
            )
    return problems


FieldPath = tuple[str | int, ...]


def _tiny_figures(data: Any, at: FieldPath = ()) -> list[tuple[FieldPath, float]]:
    """(field path, value) of every number strictly between 0 and `MIN_FIGURE` in size."""
    if isinstance(data, dict):
        return [hit for k, v in data.items() for hit in _tiny_figures(v, (*at, str(k)))]
    if isinstance(data, list):
        return [hit for i, v in enumerate(data) for hit in _tiny_figures(v, (*at, i))]
    if isinstance(data, int | float) and not isinstance(data, bool) and 0 < abs(data) < MIN_FIGURE:
        return [(at, float(data))]
    return []


def _dotted(path: FieldPath) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _line(doc: Document, path: tuple[str | int, ...]) -> int | None:
    loc = doc.locate(path, key=True)
    return loc[0] if loc else None


def sources_of(loaded: LoadedCatalog, item_ids: list[str]) -> list[SourceRef]:
    """file:line of each item's definition and of each patch applied, in catalogue order."""
    out = []
    for kind in KINDS:
        for item_id in sorted(set(item_ids)):
            if item_id not in getattr(loaded.catalog, kind):
                continue
            patched = [
                PatchRef(at=r.at, fields=list(r.fields)) for r in loaded.patches.get(item_id, [])
            ]
            out.append(
                SourceRef(
                    kind=kind, id=item_id, defined_at=loaded.defined_at(item_id), patched_at=patched
                )
            )
    return out
