"""Cross-file checks of the requirements' `owned:` inventory against the catalogue: every
owned server and contracted rack names a catalogue item, and the site can host the server."""

from __future__ import annotations

import difflib

from gpusolve.errors import Problem
from gpusolve.load.yamlio import Document
from gpusolve.models.catalog import Catalog
from gpusolve.models.inventory import Owned


def _hint(word: str, known: list[str], listing: str) -> str:
    close = difflib.get_close_matches(word, known, n=3)
    return f"did you mean {', '.join(close)}?" if close else f"see `{listing}`"


def inventory_problems(owned: Owned, doc: Document, catalog: Catalog) -> list[Problem]:
    """Located problems of the document's `owned:` (requirements or fleet): an unknown
    server or site, a site that cannot host the server."""
    problems: list[Problem] = []

    def problem(path: tuple[str | int, ...], what: str, hint: str) -> None:
        line, column = doc.locate(path) or (None, None)
        problems.append(Problem(doc.name, line, column, what, hint))

    sites = list(catalog.colo_offers)
    for i, held in enumerate(owned.servers):
        server = catalog.servers.get(held.server)
        if server is None:
            hint = _hint(held.server, list(catalog.servers), "gpusolve catalog list --kind servers")
            problem(("owned", "servers", i, "server"), f"unknown server {held.server!r}", hint)
        offer = catalog.colo_offers.get(held.site)
        if offer is None:
            hint = _hint(held.site, sites, "gpusolve catalog list --kind colo")
            problem(("owned", "servers", i, "site"), f"unknown colo site {held.site!r}", hint)
        if server is None or offer is None:
            continue
        if offer.cooling not in server.cooling or server.power_kw > offer.rack_kw:
            problem(
                ("owned", "servers", i, "site"),
                f"{held.site} ({offer.rack_kw:g} kW {offer.cooling} racks) cannot host "
                f"{held.server} ({server.power_kw:g} kW, {' or '.join(server.cooling)})",
                "give the colo offer where these servers are actually hosted",
            )
    for i, racks in enumerate(owned.racks):
        if racks.site not in catalog.colo_offers:
            hint = _hint(racks.site, sites, "gpusolve catalog list --kind colo")
            problem(("owned", "racks", i, "site"), f"unknown colo site {racks.site!r}", hint)
    return problems
