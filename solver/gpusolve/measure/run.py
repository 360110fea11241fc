"""`gpusolve measure` from files: find the workload and card, measure, write the block."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpusolve.errors import InputError
from gpusolve.load.yamlio import Document
from gpusolve.measure.session import Options
from gpusolve.models.measure import MeasureReport
from gpusolve.models.requirements import Measured


@dataclass(frozen=True)
class MeasureRequest:
    reqs_path: Path
    workload: str
    card_id: str | None
    catalog_paths: Sequence[Path]
    options: Options
    update: bool  # write the measured: block into the requirements file


def measure_from_file(request: MeasureRequest) -> MeasureReport:
    """Measure one workload of a requirements file (and, with `update`, write its block).
    Bad names fail before PyTorch is needed; PyTorch before the catalogue is read."""
    from gpusolve.load import load_requirements_doc
    from gpusolve.load.catalog import load_catalog
    from gpusolve.measure import require_torch
    from gpusolve.measure.session import measure as run_measure
    from gpusolve.models.params import Params

    reqs, doc = load_requirements_doc(request.reqs_path)
    names = [w.name for w in reqs.workloads]
    if request.workload not in names:
        raise InputError.single(
            str(request.reqs_path),
            f"no workload named {request.workload!r}",
            hint=f"one of {', '.join(names)}",
        )
    index = names.index(request.workload)
    require_torch()
    card = None
    cards = load_catalog(list(request.catalog_paths)).catalog.cards
    if request.card_id is not None:
        card = cards.get(request.card_id)
        if card is None:
            raise InputError.single(
                "--card",
                f"unknown card {request.card_id!r}",
                hint="see `gpusolve catalog list --kind cards`",
            )
    if request.update and card is None:
        raise InputError.single(
            "--update", "the measured: block needs the card", hint="give --card ID"
        )
    params = Params()
    if reqs.headroom is not None:
        params = params.with_values(headroom=reqs.headroom)
    report = run_measure(
        reqs.workloads[index], card, params, request.options, str(request.reqs_path)
    )
    if request.update and report.measured is not None:
        write_block(request.reqs_path, doc, index, report.measured)
    return report


def write_block(path: Path, doc: Document, index: int, block: Measured) -> None:
    """Insert (or replace) the workload's measured: block, keeping comments; never write a
    file that no longer loads."""
    from gpusolve.atomic import write_text_atomic
    from gpusolve.load import load_requirements_doc
    from gpusolve.measure.block import with_block

    text = path.read_text(encoding="utf-8")
    new = with_block(text, doc, index, block)
    probe = path.with_name(f".{path.name}.measure-check.yaml")
    try:
        probe.write_text(new, encoding="utf-8")
        load_requirements_doc(probe)
    except InputError as exc:
        raise InputError.single(
            str(path),
            f"could not insert the measured: block ({exc})",
            hint="paste the printed block by hand",
        ) from None
    finally:
        probe.unlink(missing_ok=True)
    write_text_atomic(path, new)
