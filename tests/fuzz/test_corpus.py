"""The hand-written corpus (tests/corpus/): one file per hostile input, each a regression
case for a defect of issue 22 or a class of broken input. Every case states the exit code
it must end with and a phrase its message must contain; all of them also keep the
contract of `tests.support.fuzz.check_outcome` (no traceback, a documented exit code).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.support.fuzz import EXAMPLES, ROOT, check_outcome, run_cli

CORPUS = ROOT / "tests" / "corpus"
REQS = str(EXAMPLES / "finetune-7b-deadline.yaml")
FLEET = str(EXAMPLES / "fleets" / "h100-training-cluster.yaml")
FAST = ("--time-limit", "2")


@dataclass(frozen=True)
class Case:
    file: str  # under tests/corpus/
    command: tuple[str, ...]  # `{}` is the file
    code: int
    says: str  # a phrase the message (stderr + stdout) must contain, case-insensitive

    @property
    def id(self) -> str:
        return f"{self.file} [{self.command[0]}]"


def plan(*extra: str) -> tuple[str, ...]:
    return ("plan", "-q", "{}", *FAST, *extra)


def with_catalog(cmd: str = "plan") -> tuple[str, ...]:
    if cmd == "colo":
        return ("colo", FLEET, "--catalog", "{}")
    return ("plan", "-q", REQS, "--catalog", "{}", *FAST)


R = "requirements/"
VALIDATE = ("catalog", "validate", "{}")
RULES_PLAN = ("plan", "-q", REQS, "--rules", "{}", *FAST)
CASES = [
    # Tracebacks in the issue: huge numbers reached CP-SAT, division by zero, MemoryError.
    Case(R + "tokens-1e300.yaml", plan(), 2, "tokens"),
    Case(R + "tokens-1e17.yaml", plan(), 2, "tokens"),
    Case(R + "runs-2-63.yaml", plan(), 2, "runs"),
    Case(R + "measured-mfu-zero.yaml", plan(), 2, "mfu"),
    Case(R + "measured-mfu-zero.yaml", ("estimate", "{}"), 2, "mfu"),
    Case(R + "measured-mfu-1e-300.yaml", plan(), 2, "measured.mfu 1e-300 is too low"),
    Case(R + "measured-mfu-1e-300.yaml", ("estimate", "{}"), 2, "below 0.1% mfu"),
    Case(R + "measured-tokens-1e-300.yaml", plan(), 2, "measured.tokens_per_s 1e-300"),
    Case(R + "budget-string.yaml", plan(), 2, "capex_max"),
    Case(R + "horizon-2-63.yaml", plan(), 2, "horizon_months"),
    Case(R + "seq-len-huge.yaml", ("estimate", "{}"), 2, "seq_len"),
    Case(R + "micro-batch-float.yaml", plan(), 2, "micro_batch"),
    # Hangs: experts of 10^6 or 2^63 never returned.
    Case(R + "experts-1e6.yaml", plan(), 2, "experts"),
    Case(R + "experts-1e6.yaml", ("estimate", "{}"), 2, "experts"),
    Case(R + "experts-2-63.yaml", plan(), 2, "experts"),
    # Silent nonsense: exit 0 on values no workload has.
    Case(R + "utilisation-zero.yaml", plan(), 2, "utilisation"),
    Case(R + "lora-fraction-zero.yaml", plan(), 2, "target_fraction"),
    Case(R + "deadline-2-63.yaml", plan(), 2, "deadline_hours"),
    Case(R + "tokens-tiny.yaml", plan(), 2, "tokens"),
    Case(R + "tokens-nan.yaml", plan(), 2, "finite"),
    Case(R + "tokens-inf.yaml", plan(), 2, "finite"),
    Case(R + "tokens-chinese.yaml", plan(), 2, "tokens"),
    # Too small to buy for: never servers, and every rental that fits the work (issue 39:
    # exit 1 "no rental fits" for 1,000 and 2e6 tokens, a rental for 3e9).
    Case(R + "tiny-job.yaml", plan(), 0, "too small to buy servers for"),
    Case(R + "small-job-2e6.yaml", plan(), 0, ": rent 1 x cloud-"),
    # Messages with a line and column: control characters, NUL bytes, tabs, encodings.
    Case(R + "control-char.yaml", plan(), 2, "control-char.yaml:3:13"),
    Case(R + "nul-byte.yaml", plan(), 2, "nul-byte.yaml:3:13"),
    Case(R + "tab-indent.yaml", plan(), 2, "tab-indent.yaml:3:"),
    Case(R + "latin1.yaml", plan(), 2, "latin1.yaml:3:14: not UTF-8"),
    Case(R + "duplicate-key.yaml", plan(), 2, "appears twice"),
    Case(R + "unknown-key.yaml", plan(), 2, "optimiser"),
    # Structure: bombs, depth, emptiness, tags that would construct objects.
    Case(R + "alias-bomb.yaml", plan(), 2, "alias"),
    Case(R + "deep-nesting.yaml", plan(), 2, "nesting"),
    Case(R + "empty.yaml", plan(), 2, "empty"),
    Case(R + "comments-only.yaml", plan(), 2, "empty"),
    Case(R + "not-a-mapping.yaml", plan(), 2, "not-a-mapping.yaml"),
    Case(R + "python-tag.yaml", plan(), 2, "currency: expected text"),
    Case(R + "binary-tag.yaml", plan(), 2, "binary"),
    Case(R + "chinese-names.yaml", plan(), 2, "name"),
    Case(R + "bom-crlf.yaml", ("rules", "explain", "{}"), 0, "ft-7b"),
    # Catalogue: prices beyond 1e12 are input errors naming the field, never "infeasible".
    Case("catalogue/server-price-1e17.yaml", with_catalog(), 2, "price"),
    Case("catalogue/server-price-1e17.yaml", ("catalog", "validate", "{}"), 2, "price"),
    Case("catalogue/server-price-2-63.yaml", with_catalog(), 2, "price"),
    Case("catalogue/server-price-nan.yaml", with_catalog(), 2, "finite"),
    Case("catalogue/server-price-string.yaml", with_catalog(), 2, "price"),
    Case("catalogue/duplicate-id.yaml", ("catalog", "validate", "{}"), 2, "duplicate id"),
    Case("catalogue/rack-rent-1e300.yaml", with_catalog("colo"), 2, "rack_price_per_month"),
    Case("catalogue/pue-zero.yaml", ("catalog", "validate", "{}"), 2, "pue"),
    Case("catalogue/cloud-price-negative.yaml", ("catalog", "validate", "{}"), 2, "price"),
    Case("catalogue/patch-unknown-card.yaml", VALIDATE, 2, "patch-unknown-card.yaml:8:11"),
    Case("catalogue/replace-same-id-twice.yaml", VALIDATE, 2, "define each id once per file"),
    Case("catalogue/figures-1e-300.yaml", VALIDATE, 2, "figures-1e-300.yaml:5:21: cloud offer"),
    Case("catalogue/figures-1e-300.yaml", VALIDATE, 2, "figures-1e-300.yaml:9:14: colo offer"),
    Case(R + "scenario-factors.yaml", plan(), 2, "scenario-factors.yaml:39:23: efficiency 100"),
    Case(R + "scenario-factors.yaml", plan(), 2, "demand.lora-7b 1e-300 is below 0.01"),
    # Rules: a penalty of 1e17 is an int64 overflow once summed: exit 2 naming it.
    Case("rules/penalty-1e17.yaml", ("plan", "-q", REQS, "--rules", "{}", *FAST), 2, "penalt"),
    Case("rules/penalty-float.yaml", ("plan", "-q", REQS, "--rules", "{}", *FAST), 0, "Plan"),
    Case("rules/penalty-negative.yaml", ("rules", "check", "{}"), 2, "penalty"),
    Case("rules/cel-python-eval.yaml", ("rules", "check", "{}"), 2, "cel-python-eval.yaml"),
    Case("rules/cel-garbage.yaml", ("rules", "check", "{}"), 2, "cel-garbage.yaml"),
    Case("rules/cel-huge-list.yaml", ("rules", "check", "{}"), 2, "nest at most"),
    # Integers beyond CEL's 64 bits, and beyond any parameter (issue 39: exit 70).
    Case("rules/int-400-digits-when.yaml", ("rules", "check", "{}"), 2, "when.yaml:7:11"),
    Case("rules/int-400-digits-when.yaml", RULES_PLAN, 2, "beyond CEL's 64-bit int range"),
    Case("rules/int-400-digits-require.yaml", ("rules", "check", "{}"), 2, "require.yaml:9:"),
    Case("rules/int-400-digits-require.yaml", RULES_PLAN, 2, "beyond CEL's 64-bit int range"),
    Case("rules/int-400-digits-set.yaml", ("rules", "check", "{}"), 2, "set.yaml:8:7"),
    Case("rules/int-400-digits-set.yaml", RULES_PLAN, 2, "checkpoint_interval_steps must be"),
    Case(R + "tokens-5000-digits.yaml", plan(), 2, "tokens-5000-digits.yaml:15:13"),
    # int64: figures each in range whose products overflow: exit 2 naming the figure.
    Case(
        "catalogue/cloud-price-overflow.yaml",
        ("plan", "-q", str(CORPUS / R / "serve-for-overflow.yaml"), "--catalog", "{}", *FAST),
        2,
        "cloud_offers[fz-cloud-8x-h100].price_per_hour",
    ),
    Case(R + "serve-for-overflow.yaml", ("rules", "explain", "{}"), 0, "serve-70b"),
    # Too large: runs that the horizon cannot hold on any hardware.
    Case(R + "beyond-horizon.yaml", plan(), 1, "does not fit in the planning horizon"),
    # Fleet: colo exits 1 when no offer can host it.
    Case("fleet/no-offer-hosts.yaml", ("colo", "{}"), 1, "no colocation offer can host"),
    Case("fleet/count-2-63.yaml", ("colo", "{}"), 2, "count"),
    Case("fleet/utilisation-zero.yaml", ("colo", "{}"), 2, "utilisation"),
    Case("fleet/unknown-server.yaml", ("colo", "{}"), 2, "did you mean"),
    Case(
        "fleet/unknown-region.yaml", ("colo", "{}"), 2, "unknown-region.yaml:14:15: unknown region"
    ),
    # Demand over periods, money and counts: bounds at the field, located.
    Case(R + "growth-1e-300.yaml", plan(), 2, "growth-1e-300.yaml:10:29: workloads.0.demand"),
    Case(R + "growth-x1000-monthly.yaml", plan(), 2, "demand reaches 1e+33 times"),
    Case(R + "demand-1e300.yaml", plan(), 2, "demand-1e300.yaml:10:27"),
    Case(R + "demand-five-for-two.yaml", plan(), 2, "5 demand figures for 2 periods"),
    Case(R + "capex-by-year-1e300.yaml", plan(), 2, "capex_by_year.0: 1e+300 is out of range"),
    Case(R + "regions-allowed-empty.yaml", plan(), 2, "regions-allowed-empty.yaml:4:12"),
    Case(R + "hidden-1-heads-32.yaml", plan(), 2, "model.hidden: 1 is out of range"),
    Case(R + "params-1e-300.yaml", plan(), 2, "params_b: 1e-300 is out of range"),
    Case(R + "owned-1e6-servers.yaml", plan(), 2, "count: 1000000 is out of range"),
    Case(R + "owned-1e6-racks.yaml", plan(), 2, "racks: 1000000 is out of range"),
    Case(R + "owned-beyond-site.yaml", plan(), 2, "fill 833 racks, but the site has 9"),
    Case(R + "bought-yesterday.yaml", plan(), 2, '"yesterday" is not in the expected form'),
    Case("catalogue/patch-same-id-twice.yaml", VALIDATE, 2, "patched twice in this file"),
    Case("rules/when-fails-at-run-time.yaml", RULES_PLAN, 2, "[rule fz-when-fails] when:"),
    Case("rules/int-of-text-literal.yaml", ("rules", "check", "{}"), 2, "int('abc') can never"),
    # Catalogue text reaches a spreadsheet, a memo and a terminal as text only.
    Case(
        "catalogue/hostile-text.yaml",
        (*with_catalog(), "--bom", "--format", "csv"),
        0,
        "'=HYPERLINK",
    ),
    Case(
        "catalogue/hostile-text.yaml", (*with_catalog(), "--format", "markdown"), 0, "&lt;img src"
    ),
    Case("catalogue/hostile-text.yaml", (*with_catalog(), "--bom"), 0, "]0;pwned"),
]


def _args(case: Case) -> tuple[str, ...]:
    path = str(CORPUS / case.file)
    return tuple(path if part == "{}" else part for part in case.command)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_corpus_case(case: Case) -> None:
    outcome = run_cli(*_args(case))
    check_outcome(outcome)
    assert outcome.code == case.code, outcome.describe()
    said = (outcome.err + outcome.out).lower()
    assert case.says.lower() in said, outcome.describe()


def test_every_corpus_file_has_a_case() -> None:
    files = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.yaml")}
    bases = {
        "valid/rules-user.yaml",
        "valid/requirements-finance.yaml",
        "valid/catalog-patch.yaml",
        "valid/requirements-phased.yaml",
    }
    covered = {c.file for c in CASES} | bases
    assert files <= covered, sorted(files - covered)


# Command-line values: NaN and out-of-range numbers (issue 22).
CLI_CASES = [
    (("plan", "-q", REQS, "--seed", "4294967296"), "seed"),
    (("plan", "-q", REQS, "--seed", "-1"), "seed"),
    (("plan", "-q", REQS, "--time-limit", "nan"), "time-limit"),
    (("plan", "-q", REQS, "--time-limit", "inf"), "time-limit"),
    (("plan", "-q", REQS, "--capex-max", "nan"), "capex-max"),
    (("plan", "-q", REQS, "--capex-max", "abc"), "capex-max"),
    (("frontier", "-q", REQS, "--low", "nan"), "low"),
    (("frontier", "-q", REQS, "--high", "inf"), "high"),
    (("plan", "-q", REQS, "-o", "no/such/dir/plan.json"), "does not exist"),
    (("plan", "-q", REQS, "-o", REQS), "input file"),
    (("colo", FLEET, "-o", FLEET), "input file"),
    (("estimate", REQS, "-o", REQS), "input file"),
    # Issue 39: a trailing slash wrote a file named like the folder; /dev/zero never ends.
    (("plan", "-q", REQS, "-o", "no-such-folder/"), "names a folder"),
    (("colo", FLEET, "-o", "no-such-folder/"), "names a folder"),
    (("frontier", "-q", REQS, "--plot", "no-such-folder/"), "names a folder"),
    (("plan", "-q", "/dev/zero"), "/dev/zero: more than 5 MB"),
    (("colo", "/dev/zero"), "/dev/zero: more than 5 MB"),
    (("plan", "-q", REQS, "--catalog", "/dev/zero"), "/dev/zero: more than 5 MB"),
    (("plan", "-q", REQS, "--rules", "/dev/zero"), "/dev/zero: more than 5 MB"),
    (("profile", "/dev/zero"), "/dev/zero: the log is larger than"),
]


@pytest.mark.parametrize(
    ("args", "says"), CLI_CASES, ids=lambda v: " ".join(v[2:]) if isinstance(v, tuple) else v
)
def test_command_line_value(args: tuple[str, ...], says: str) -> None:
    outcome = run_cli(*args)
    check_outcome(outcome)
    assert outcome.code == 2 and says in outcome.err, outcome.describe()


def test_seed_at_the_int32_limit_is_accepted() -> None:
    outcome = run_cli("plan", "-q", REQS, "--seed", str(2**31 - 1), *FAST)
    check_outcome(outcome)
    assert outcome.code == 0, outcome.describe()


def test_a_read_only_output_is_not_replaced(tmp_path: Path) -> None:
    """Issue 39: renaming over a file needs only the folder's permission, so a read-only
    -o file was silently replaced (root is granted everything by access(2): the mode bits
    decide)."""
    kept = tmp_path / "plan.txt"
    kept.write_text("the last plan\n")
    kept.chmod(0o444)
    outcome = run_cli("plan", "-q", REQS, "-o", str(kept), *FAST)
    check_outcome(outcome)
    assert outcome.code == 2 and "read-only" in outcome.err, outcome.describe()
    assert kept.read_text() == "the last plan\n"
    kept.chmod(0o644)  # writable again: replaced
    outcome = run_cli("plan", "-q", REQS, "-o", str(kept), *FAST)
    assert outcome.code == 0 and kept.read_text().startswith("Plan ("), outcome.describe()


def test_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("# " + "x" * (6 * 1024 * 1024) + "\n")
    outcome = run_cli("plan", "-q", str(path))
    check_outcome(outcome)
    assert outcome.code == 2 and "limited to" in outcome.err, outcome.describe()
