"""`--format html`: one self-contained page per command, and `frontier --plot`.

The plans of every example are solved once per module, in-process, and rendered both ways
(JSON as `plan --format json` prints it, HTML as `plan --format html` writes it), so the
page's figures can be checked against the JSON's. Every page is then opened in headless
Chromium over the DevTools pipe (one browser for all of them): no console message, no
exception, no request for anything but the page itself. That test skips only when no
Chromium binary is installed (`.ci/run` installs Debian's).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from tests.support.shipped import EXAMPLES, ROOT

from gpusolve.load.data import data_dir
from gpusolve.models.frontier import Frontier, FrontierPoint
from gpusolve.models.plan import Plan
from gpusolve.optimize.ir import SolveConfig
from gpusolve.plan import make_plan
from gpusolve.plan.inputs import prepare_run
from gpusolve.plan.solved import PlanOptions
from gpusolve.render import render_plan
from gpusolve.render.fmt import COST_LABELS
from gpusolve.render.frontier import chart
from gpusolve.report import charts, racks
from gpusolve.report.html import context_for, frontier_html, plan_html

FLEET = ROOT / "examples" / "fleets" / "h100-training-cluster.yaml"
EXAMPLES_BY_NAME = {path.stem: path for path in EXAMPLES}


# ---------------------------------------------------------------- reading a page back


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text: str = ""

    def all_text(self) -> str:
        return self.text + "".join(c.all_text() for c in self.children)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    def find(self, tag: str, **attrs: str) -> list[Node]:
        return [
            n
            for n in self.walk()
            if n.tag == tag and all(n.attrs.get(k) == v for k, v in attrs.items())
        ]

    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


VOID = {"meta", "br", "link", "img", "input", "hr", "col", "source", "wbr"}


class Tree(HTMLParser):
    """A whole page as a tree (html.parser, standard library): enough to find tables,
    cells and SVG elements by tag and attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(Node("#text", {}, text=data))


def parse(html: str) -> Node:
    tree = Tree()
    tree.feed(html)
    tree.close()
    return tree.root


def number(cell: Node) -> float | None:
    text = cell.all_text().strip()
    return None if text == "-" else float(text.replace(",", ""))


# ---------------------------------------------------------------- the examples, once


@dataclass
class Rendered:
    name: str
    plan: Plan
    json: dict[str, Any]
    html: str
    path: Path


# Examples whose plan raised (a bug elsewhere): test_every_example_has_a_plan names them;
# the other tests still check every example that planned.
FAILED_EXAMPLES: dict[str, str] = {}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[Rendered]:
    folder = tmp_path_factory.mktemp("reports")
    out = []
    catalog_paths = (data_dir("catalog"),)
    for example in EXAMPLES:
        run = prepare_run(example, catalog_paths, ())
        options = PlanOptions(config=SolveConfig(time_limit_s=60, workers=1, seed=1))
        try:
            plan = make_plan(run, options).plan
        except RuntimeError as exc:  # the planner's own consistency check
            FAILED_EXAMPLES[example.stem] = str(exc)
            continue
        html = plan_html(plan, context_for(run.catalog, list(catalog_paths), [example]))
        path = folder / f"{example.stem}.html"
        path.write_text(html, encoding="utf-8")
        out.append(Rendered(example.stem, plan, json.loads(render_plan(plan, "json")), html, path))
    return out


def test_every_example_has_a_plan(reports: list[Rendered]) -> None:
    assert FAILED_EXAMPLES == {}
    assert [r.name for r in reports] == [e.stem for e in EXAMPLES]
    assert all(r.json["status"] == "optimal" for r in reports)


def test_every_number_in_the_cost_table_equals_the_json(reports: list[Rendered]) -> None:
    for r in reports:
        cost = r.json["cost"]
        table = parse(r.html).find("table", id="cost")
        assert len(table) == 1, r.name
        checked = 0
        items = iter(
            [i for kind in COST_LABELS for i in cost["breakdown"]["items"] if i["kind"] == kind]
        )
        for row in table[0].find("tr"):
            cells = [c for c in row.find("td") if "num" in c.classes()]
            if "item" in row.classes():
                item = next(items)
                assert row.attrs["data-kind"] == item["kind"], r.name
                for cell in cells:
                    assert number(cell) == item[cell.attrs["data-field"]], (r.name, item)
                    checked += 1
                texts = [c.all_text() for c in row.find("td")]
                assert item["subject"] in texts and item["detail"] in texts
            elif "subtotal" in row.classes():
                (cell,) = cells
                assert number(cell) == cost["breakdown"][cell.attrs["data-field"]], r.name
                checked += 1
            elif "total" in row.classes():
                (cell,) = cells
                assert number(cell) == cost["tco"], r.name
                checked += 1
            else:
                assert not cells, f"{r.name}: an unchecked figure in the cost table"
        assert next(items, None) is None, f"{r.name}: a cost line is missing from the table"
        kinds = {i["kind"] for i in cost["breakdown"]["items"]}
        assert checked == 3 * len(cost["breakdown"]["items"]) + len(kinds) + 1


def test_penalties_in_the_report_equal_the_json(reports: list[Rendered]) -> None:
    for r in reports:
        cost = r.json["cost"]
        tables = parse(r.html).find("table", id="penalties")
        if not cost["breakdown"]["penalty_items"]:
            assert not tables
            continue
        cells = [c for c in tables[0].find("td") if "num" in c.classes()]
        amounts = [p["amount"] for p in cost["breakdown"]["penalty_items"]]
        assert [number(c) for c in cells] == [*amounts, cost["penalties"], cost["objective_value"]]


def test_every_report_has_its_sections_charts_and_pictures(reports: list[Rendered]) -> None:
    assert charts.available(), "the test extra installs gpusolve[report]"
    for r in reports:
        page = parse(r.html)
        ids = {n.attrs.get("id") for n in page.walk()}
        assert {"claim", "cost", "deployments", "assumptions"} <= ids, r.name
        svg_ids = [n.attrs.get("id", "") for n in page.find("svg")]
        assert "cost-chart" in svg_ids, f"{r.name}: no cost chart"
        bars = [n for n in page.find("svg") if "bar" in n.classes()]
        assert len(bars) == len(r.plan.deployments), r.name
        for d, bar in zip(r.plan.deployments, bars, strict=True):
            # The memory per GPU by part: the parts add up to the deployment's figure.
            assert abs(sum(d.memory_parts_gb.values()) - d.memory_per_gpu_gb) < 0.05, r.name
            titles = [t.all_text() for t in bar.find("title")]
            assert any(t.startswith("weights: ") for t in titles), r.name
        pictures = page.find("div", **{"class": "rack"})
        assert len(pictures) == sum(site.racks for site in r.plan.sites), r.name
        if r.plan.rules_fired:
            assert "rules" in ids
            # The heuristic's own words stand beside the rule that cites it.
            assert "Start by classifying" in r.html or r.plan.rules_fired[0].source in r.html
        claim = page.find("section", id="claim")[0].all_text()
        assert "Proven optimal" in claim and " layout" in claim, r.name  # "1 layout", "2 layouts"
        assumptions = page.find("section", id="assumptions")[0].all_text()
        assert f"Horizon {r.plan.cost.horizon_months} months" in assumptions  # type: ignore[union-attr]
        assert "Illustrative prices" in assumptions


def test_every_report_is_self_contained(reports: list[Rendered]) -> None:
    for r in reports:
        page = parse(r.html)
        csp = [
            m for m in page.find("meta") if m.attrs.get("http-equiv") == "Content-Security-Policy"
        ]
        assert csp and "default-src 'none'" in csp[0].attrs["content"], r.name
        assert not page.find("script"), r.name
        for node in page.walk():
            for name in ("src", "href", "xlink:href", "action", "data"):
                value = node.attrs.get(name)
                if value is not None:
                    assert value.startswith(("#", "data:")), (r.name, node.tag, value)
        assert "url(http" not in r.html and "@import" not in r.html, r.name
        assert "@media print" in r.html, r.name


def test_rack_pictures_stack_the_plan_fill_from_the_bottom(reports: list[Rendered]) -> None:
    sited = [r for r in reports if r.plan.sites]
    assert sited, "an example colocates servers"
    site = sited[0].plan.sites[0]
    units = {s: 4 for s in site.servers}
    pictures = racks.site_racks(site, units, {s: 5.5 for s in site.servers}, 42)
    assert len(pictures) == site.racks
    for picture, fill, kw in zip(pictures, site.fill, site.fill_kw, strict=True):
        assert picture.used_units == 4 * sum(fill.values())
        assert [b.bottom_u for b in picture.boxes] == list(range(0, picture.used_units, 4))
        assert picture.used_kw == kw and picture.rack_units == 42
        assert picture.reserved_units == site.reserved_units
        assert picture.usable_kw == site.rack_kw - site.reserved_kw


def test_names_are_escaped(reports: list[Rendered]) -> None:
    plan = reports[0].plan
    hostile = plan.deployments[0].model_copy(update={"workload": "<script>alert(1)</script>"})
    page = plan_html(plan.model_copy(update={"deployments": [hostile]}))
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_without_the_charting_extra_the_report_keeps_its_tables(
    reports: list[Rendered], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(charts, "available", lambda: False)
    r = next(r for r in reports if r.plan.sites)
    page = parse(plan_html(r.plan))
    assert page.find("table", id="cost")
    assert not [n for n in page.find("svg") if n.attrs.get("id", "").startswith("cost-")]
    assert "pip install 'gpusolve[report]'" in page.all_text()
    assert page.find("div", **{"class": "rack"}), "rack pictures are drawn without matplotlib"


def test_sensitivity_and_scenarios_render_when_present(reports: list[Rendered]) -> None:
    from gpusolve.models.plan import ScenarioOutcome, Scenarios, Sensitivity, SensitivityRange

    plan = reports[0].plan
    sens = Sensitivity(
        ranges=[
            SensitivityRange(
                kind="cloud_price",
                subject="cloud-a",
                parameter="price of cloud-a",
                unit="CNY/h",
                current=100,
                low=None,
                high=180,
                searched_low=10,
                searched_high=1000,
                above="buy 1 x hgx",
                above_tco=12345,
            ),
            SensitivityRange(
                kind="efficiency",
                subject="h800-sxm",
                parameter="MFU of h800-sxm",
                unit="MFU",
                current=0.5,
                low=0.45,
                high=0.52,
                searched_low=0.2,
                searched_high=0.8,
            ),
        ],
        solves=14,
    )
    scen = Scenarios(
        robust="expected",
        tco=1000,
        nominal_tco=1200,
        hedge_cost=50,
        outcomes=[ScenarioOutcome(name="slow", probability=0.25, tco=1500, nominal_tco=2100)],
    )
    page = parse(plan_html(plan.model_copy(update={"sensitivity": sens, "scenarios": scen})))
    rows = page.find("table", id="sensitivity")[0].find("tr")[1:]
    assert [r.find("td")[0].all_text() for r in rows] == ["price of cloud-a", "MFU of h800-sxm"]
    assert "≤ 10" in rows[0].all_text() and "buy 1 x hgx" in rows[0].all_text()
    assert [n.attrs["id"] for n in page.find("svg") if n.attrs.get("id", "").startswith("tor")]
    # The narrowest range (the MFU's, -10%..+4%) is the top bar of the tornado.
    ordered = charts.tornado_rows(sens)
    assert [r.parameter for r, *_ in ordered] == ["MFU of h800-sxm", "price of cloud-a"]
    assert "slow" in page.find("table", id="scenarios")[0].all_text()


# ---------------------------------------------------------------- the commands


def test_plan_html_needs_an_output_file(gpusolve) -> None:
    result = gpusolve("plan", "-q", str(EXAMPLES[0]), "--format", "html")
    assert result.code == 2 and "-o" in result.err


def test_plan_writes_the_html_report(gpusolve, reports: list[Rendered], tmp_path: Path) -> None:
    # The same example, solved the same way, as the module's JSON plan (deterministic).
    example = next(r for r in reports if r.name == "finetune-7b-deadline")
    out = tmp_path / "report.html"
    result = gpusolve(
        "plan", "-q", str(EXAMPLES_BY_NAME[example.name]), "--format", "html", "-o", str(out)
    )
    assert result.code == 0, result.err
    assert result.out == ""  # the page goes to the file, never to the terminal
    cells = parse(out.read_text(encoding="utf-8")).find("td", **{"data-field": "tco"})
    assert [number(c) for c in cells] == [example.json["cost"]["tco"]]


@dataclass
class Page:
    html: Path
    json: dict[str, Any]


def run_cli(*args: str) -> None:
    """The console entry point in-process, for a module fixture (its output goes to -o)."""
    from gpusolve.cli import main

    try:
        main(list(args))
    except SystemExit as exc:
        assert exc.code in (0, None), args


@pytest.fixture(scope="module")
def command_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Page]:
    """`colo` and `estimate` pages written by the commands, with the JSON of the same run."""
    folder = tmp_path_factory.mktemp("pages")
    runs = {
        "colo": ("colo", str(FLEET), "--top", "3"),
        "estimate": (
            "estimate",
            str(EXAMPLES_BY_NAME["finetune-7b-deadline"]),
            "--card",
            "h800-sxm",
        ),
    }
    pages = {}
    for name, args in runs.items():
        html, as_json = folder / f"{name}.html", folder / f"{name}.json"
        run_cli(*args, "--format", "html", "-o", str(html))
        run_cli(*args, "--format", "json", "-o", str(as_json))
        pages[name] = Page(html, json.loads(as_json.read_text(encoding="utf-8")))
    return pages


def test_colo_html_ranks_the_offers_as_the_json_does(command_pages: dict[str, Page]) -> None:
    page = command_pages["colo"]
    best = [row for row in page.json["offers"] if row["feasible"]][:3]
    tree = parse(page.html.read_text(encoding="utf-8"))
    rows = tree.find("table", id="ranking")[0].find("tr")[1:]
    assert [r.find("td")[1].children[0].text for r in rows] == [b["offer"] for b in best]
    assert [number(r.find("td")[-2]) for r in rows] == [b["tco"] for b in best]
    # The best offer's racks, each drawn.
    assert len(tree.find("div", **{"class": "rack"})) == len(best[0]["fill"])
    # The monthly bills on one scale: the dearest offer's bar is full, each split into rent,
    # energy and bandwidth that add up to its monthly bill.
    from gpusolve.models.colo import ColoRow
    from gpusolve.report.html import monthly_bills

    bills = monthly_bills([ColoRow.model_validate(b) for b in best])
    widths = [sum(part.width for part in bill) for bill in bills]
    assert max(widths) == pytest.approx(1.0)
    for bill, row in zip(bills, best, strict=True):
        assert sum(part.value for part in bill) == pytest.approx(row["monthly"], abs=1)


def test_estimate_html_shows_memory_and_step_parts(command_pages: dict[str, Page]) -> None:
    page = command_pages["estimate"]
    config = page.json["workloads"][0]["configs"][0]
    tree = parse(page.html.read_text(encoding="utf-8"))
    memory = tree.find("table", **{"class": "memory"})[0].find("td")
    assert number(memory[-1]) == round(config["memory_per_gpu_gb"]["total"], 2)
    step = tree.find("table", **{"class": "step"})[0].find("td")
    assert number(step[-1]) == round(config["step"]["step_s"], 4)


def test_html_needs_an_output_file_in_every_command(gpusolve) -> None:
    example = str(EXAMPLES_BY_NAME["finetune-7b-deadline"])
    for args in (("colo", str(FLEET)), ("estimate", example), ("frontier", example)):
        result = gpusolve(*args, "--format", "html")
        assert result.code == 2 and "-o" in result.err, args


def frontier_of(costs_hours: list[tuple[float, float]]) -> Frontier:
    return Frontier(
        currency="CNY",
        horizon_months=12,
        points=[
            FrontierPoint(
                deadline_factor=0.5 * (i + 1),
                tco=c,
                capex=0,
                makespan_h=h,
                hardware=[f"w: rent {i + 1} x cloud-8x-h800"],
            )
            for i, (c, h) in enumerate(costs_hours)
        ],
    )


def test_ascii_frontier_chart_starts_at_zero() -> None:
    # Two plans 2% apart in cost: from zero they sit on the same row or the next one; zoomed
    # to the data, the chart draws them a whole height apart (what the issue complained of).
    f = frontier_of([(102_000, 10), (100_000, 20)])
    rows = [line for line in chart(f) if line.startswith("  |")]
    marked = [i for i, row in enumerate(rows) if "*" in row]
    assert max(marked) - min(marked) <= 1
    assert "bottom row: TCO 0" in chart(f)[-1]
    zoomed = [line for line in chart(f, from_zero=False) if line.startswith("  |")]
    zoomed_marked = [i for i, row in enumerate(zoomed) if "*" in row]
    assert max(zoomed_marked) - min(zoomed_marked) == len(zoomed) - 1


def test_frontier_plot_axes_start_at_zero_and_label_each_point() -> None:
    f = frontier_of([(102_000, 10), (100_000, 20)])
    ax = charts.frontier_figure(f).axes[0]
    assert ax.get_xlim()[0] == 0 and ax.get_ylim()[0] == 0
    labels = [t.get_text() for t in ax.texts]
    assert len(labels) == 2 and all("rent" in t for t in labels)
    zoomed = charts.frontier_figure(f, from_zero=False).axes[0]
    assert zoomed.get_ylim()[0] > 90_000


def test_frontier_html_and_plot_from_the_command(gpusolve, tmp_path: Path) -> None:
    example = ROOT / "examples" / "startup-tight-capex.yaml"
    page, svg = tmp_path / "f.html", tmp_path / "f.svg"
    args = ("frontier", "-q", str(example), "--points", "2", "--time-limit", "10")
    result = gpusolve(*args, "--format", "html", "-o", str(page), "--plot", str(svg))
    assert result.code == 0, result.err
    text = page.read_text(encoding="utf-8")
    assert parse(text).find("table", id="frontier") and 'id="frontier-chart"' in text
    assert svg.read_text(encoding="utf-8").lstrip().startswith(("<?xml", "<svg"))
    bad = gpusolve(*args, "--plot", str(tmp_path / "f.pdf"))
    assert bad.code == 2 and ".svg or .png" in bad.err


def test_frontier_plot_as_png() -> None:
    f = frontier_of([(150_000, 5), (100_000, 20)])
    assert charts.write_frontier_plot(f, Path("f.png")).startswith(b"\x89PNG")


def test_frontier_html_renders_a_hand_made_frontier() -> None:
    page = parse(frontier_html(frontier_of([(150_000, 5), (100_000, 20)])))
    rows = page.find("table", id="frontier")[0].find("tr")[1:]
    assert [number(r.find("td")[2]) for r in rows] == [150_000, 100_000]


# ---------------------------------------------------------------- in a real browser


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def open_in_chromium(binary: str, pages: list[Path], timeout_s: float = 60.0) -> dict[str, Any]:
    """Load each page in one headless Chromium, driven over the DevTools pipe (fds 3 and 4:
    no port, no extra package). Per page: the console messages, exceptions and log entries
    it raised, and every URL it requested. Host names resolve nowhere, so a page that
    reaches for the network also fails loudly."""
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()

    def wire() -> None:  # in the child: the pipe ends on the fds Chromium reads and writes
        read_end = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        write_end = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
        os.dup2(read_end, 3)
        os.dup2(write_end, 4)

    profile = tempfile.mkdtemp(prefix="gpusolve-chromium-")
    proc = subprocess.Popen(
        [
            binary,
            "--headless=new",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--remote-debugging-pipe",
            "about:blank",
        ],
        pass_fds=(3, 4),
        preexec_fn=wire,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(to_browser_r)
    os.close(from_browser_w)
    deadline = time.monotonic() + timeout_s
    buffer = b""
    sent = 0
    events: list[dict[str, Any]] = []

    def messages() -> Iterator[dict[str, Any]]:
        nonlocal buffer
        while True:
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                yield json.loads(raw)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            if select.select([from_browser_r], [], [], left)[0]:
                chunk = os.read(from_browser_r, 1 << 16)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                buffer += chunk

    def call(method: str, params: dict[str, Any] | None = None, session: str = "") -> Any:
        nonlocal sent
        sent += 1
        message: dict[str, Any] = {"id": sent, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(to_browser_w, json.dumps(message).encode() + b"\0")
        for m in messages():
            if m.get("id") == sent:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]
            events.append(m)
        raise AssertionError("unreachable")

    try:
        target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = call("Target.attachToTarget", {"targetId": target, "flatten": True})
        sid = session["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            call(f"{domain}.enable", session=sid)
        seen: dict[str, Any] = {}
        for page in pages:
            events.clear()
            call("Page.navigate", {"url": page.resolve().as_uri()}, sid)
            if not any(e.get("method") == "Page.loadEventFired" for e in events):
                for m in messages():
                    events.append(m)
                    if m.get("method") == "Page.loadEventFired":
                        break
            problems, urls = [], []
            for e in events:
                method, p = e.get("method"), e.get("params", {})
                if method == "Runtime.consoleAPICalled":
                    problems.append(f"console.{p['type']}: {p.get('args')}")
                elif method == "Runtime.exceptionThrown":
                    problems.append(f"exception: {p['exceptionDetails'].get('text')}")
                elif method == "Log.entryAdded":
                    problems.append(f"{p['entry']['level']}: {p['entry']['text']}")
                elif method == "Network.requestWillBeSent":
                    urls.append(p["request"]["url"])
            seen[page.name] = (problems, urls)
        return seen
    finally:
        os.close(to_browser_w)
        os.close(from_browser_r)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.skipif(chromium() is None, reason="no Chromium binary (.ci/run installs one)")
def test_every_report_opens_in_chromium_without_errors_or_requests(
    reports: list[Rendered], command_pages: dict[str, Page], tmp_path: Path
) -> None:
    binary = chromium()
    assert binary is not None
    frontier = tmp_path / "frontier.html"
    frontier.write_text(frontier_html(frontier_of([(150_000, 5), (100_000, 20)])), "utf-8")
    # A page that breaks both rules, so the check is seen to fail when it should.
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><img src="http://example.invalid/x.png">'
        '<script>console.error("boom")</script></body></html>',
        "utf-8",
    )
    pages = [r.path for r in reports] + [p.html for p in command_pages.values()] + [frontier, bad]
    seen = open_in_chromium(binary, pages)
    for page in pages[:-1]:
        problems, urls = seen[page.name]
        assert problems == [], page.name
        assert urls == [page.resolve().as_uri()], page.name
    problems, urls = seen[bad.name]
    assert any("boom" in p for p in problems)
    assert "http://example.invalid/x.png" in urls


def test_help_imports_neither_the_templates_nor_the_charts() -> None:
    # The report's libraries load only when a report or a plot is asked for.
    probe = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "gpusolve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "matplotlib" not in probe.stderr and "jinja2" not in probe.stderr


def test_searched_figures_print_to_the_search_precision() -> None:
    from gpusolve.report.html import sig

    assert [sig(9.600000000000001), sig(111.71758644264744), sig(0.8546688815502315)] == [
        "9.6",
        "111.7",
        "0.8547",
    ]
    assert sig(1_500_000.4) == "1,500,000" and sig(None) == "-"


def test_the_scenarios_example_reports_each_scenario_as_the_json(
    reports: list[Rendered],
) -> None:
    with_scenarios = [r for r in reports if r.json.get("scenarios")]
    assert with_scenarios, "an example has a scenarios: block"
    for r in with_scenarios:
        outcomes = r.json["scenarios"]["outcomes"]
        rows = parse(r.html).find("table", id="scenarios")[0].find("tr")[1:]
        assert [row.find("td")[0].all_text() for row in rows] == [o["name"] for o in outcomes]
        assert [number(row.find("td")[2]) for row in rows] == [o["tco"] for o in outcomes]


def test_plot_without_the_charting_extra_says_what_to_install(
    gpusolve, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(charts, "available", lambda: False)
    example = str(EXAMPLES_BY_NAME["startup-tight-capex"])
    result = gpusolve("frontier", "-q", example, "--plot", str(tmp_path / "f.svg"))
    assert result.code == 2 and "gpusolve[report]" in result.err
    assert not (tmp_path / "f.svg").exists()
