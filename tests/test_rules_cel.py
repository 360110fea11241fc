"""CEL for rules: bounds, the static check, evaluation semantics, templates."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolve.rules.bindings import Bindings, EvalFailure
from gpusolve.rules.compile import compile_predicate
from gpusolve.rules.declarations import DYN, variables_for
from gpusolve.rules.environment import Facts
from gpusolve.rules.evaluate import Program
from gpusolve.rules.parse import MAX_EXPR_CHARS, CelError
from gpusolve.rules.parse import environment as _celpy
from gpusolve.rules.templates import compile_template

# cel-python raises the recursion limit to 2500 when its parser is first built; build it
# now so that no hypothesis test sees the limit change under it.
_celpy()

CARD_VARS = variables_for("card")
WHEN_VARS = variables_for("when")


def compile_card(text: str) -> Program:
    return compile_predicate(text, CARD_VARS)


def facts(**roots: Any) -> Facts:
    return Facts("test", dict(roots), {name: DYN for name in roots})


def run(program: Program, **roots: Any) -> bool | EvalFailure:
    return program.evaluate(Bindings(facts(**roots)))


def error_of(text: str, variables: dict[str, Any] | None = None) -> CelError:
    with pytest.raises(CelError) as info:
        compile_predicate(text, variables or CARD_VARS)
    return info.value


# --------------------------------------------------------------------------- static check


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("card.memory_gbb >= 80", "unknown field 'memory_gbb'"),
        ("cards.memory_gb >= 80", "unknown variable `cards`"),
        ("offer.rack_kw > 3", "`offer` is not available here"),
        ('workload.kind == "full_fine_tune"', "never a value of workload.kind"),
        ('card.form_factor in ["sxm", "oamm"]', '"oamm" is never a value'),
        ('card.memory_gb >= "80"', "cannot order number against string"),
        ('card.memory_gb == "80"', "cannot compare number with string"),
        ("card.memory_gb", "must be true or false"),
        ("card.memory_gb + 1", "must be true or false"),
        ("workload.deadline_hours >= 168", "may be null here"),
        ("workload.lora.rank > 8", "`workload.lora` may be null"),
        ("card.tflops.bf16 > 100", "may be null"),
        ("card.name.matches('a')", "unknown method .matches()"),
        ("has(card.name)", "has() is not used"),
        ("dyn(card) == 1", "unknown function dyn()"),
        ("card.memory_gb % 2 == 0", "'%' is not available"),
        ("{'a': 1} == {'a': 1}", "map literals are not supported"),
        ("card.memory_gb >= 80 &&", "CEL syntax error"),
        ("card.memory_gb >= 80 & true", "CEL syntax error"),
        ("!card.memory_gb", "must be true or false"),
        ("card.memory_gb > 3 ? 1 : 'x'", "branches differ"),
        ("workload.tokens * 2 > 3", "may be null"),
        (
            "reqs.workloads.exists(a, reqs.workloads.exists(b, "
            "reqs.workloads.exists(c, c.name == a.name)))",
            "nest at most 2 deep",
        ),
    ],
)
def test_static_check_rejects(text: str, needle: str) -> None:
    assert needle in error_of(text).message


@pytest.mark.parametrize(
    "text",
    [
        "card.memory_gb >= 80",
        "card.memory_gb >= 80.0 && card.tdp_w <= 700",
        'card.form_factor in ["sxm", "oam"] || card.peer_link == "nvlink"',
        "workload.deadline_hours != null && workload.deadline_hours >= params.long_training_hours",
        "workload.deadline_hours == null || workload.deadline_hours >= 3",
        "workload.lora != null ? workload.lora.rank > 8 : false",
        "!(workload.lora == null) && workload.lora.rank > 8",
        "card.tflops.bf16 == null || card.tflops.bf16 > 100",
        'reqs.workloads.exists(w, w.schedule == "night")',
        "reqs.workloads.all(w, w.deadline_hours == null || w.deadline_hours > 1)",
        "size(reqs.workloads.filter(w, w.training)) >= 2",
        "reqs.workloads.map(w, w.model.params_b).exists(p, p > 100)",
        "card.name.startsWith('H') || card.vendor.contains('NV') || card.id.endsWith('sxm')",
        "double(card.pcie_gen) >= 4 && int(card.memory_gb) == 80 && string(4) == '4'",
        "-card.memory_gb < 0 && card.memory_gb * 2 / 4 - 1 > 0",
        "workload.kind == 'pretrain' // a comment",
        "card.memory_gb >= 80 // CEL comments are allowed\n && card.tdp_w > 0",
    ],
)
def test_static_check_accepts(text: str) -> None:
    compile_card(text)


def test_error_names_the_column() -> None:
    err = error_of("card.memory_gb >= 80 && card.memory_gbb > 1")
    assert err.column == 30
    assert "did you mean 'memory_gb'" in err.hint


def test_deployment_variables_are_nullable_where_they_may_be_absent() -> None:
    dep = variables_for("deployment")
    compile_predicate("server == null || server.gpus >= 8", dep)
    compile_predicate("card.memory_gb >= 80 && deployment.tp <= 8", dep)
    with pytest.raises(CelError, match="`server` may be null"):
        compile_predicate("server.gpus >= 8", dep)


def test_guards_from_when_carry_over_to_effects() -> None:
    when = compile_predicate("workload.deadline_hours != null && workload.training", WHEN_VARS)
    assert ("workload", "deadline_hours") in when.nonnull_if_true
    compile_predicate("workload.deadline_hours > 100", CARD_VARS, when.nonnull_if_true)
    compile_template("{workload.deadline_hours * 2}", WHEN_VARS, when.nonnull_if_true)


# --------------------------------------------------------------------------- bounds


@pytest.mark.parametrize(
    "text",
    [
        "(" * 10_000 + "true" + ")" * 10_000,
        "!" * 10_000 + "true",
        "-" * 10_000 + "1 > 0",
        "(" * 40 + "true" + ")" * 40,
        "!" * 12 + "true",
        " && ".join(["card.memory_gb > 1"] * 300),
        "1 + " * 900 + "1 > 0",
        "[" * 100 + "]" * 100 + " == []",
    ],
)
def test_deep_or_long_expressions_are_input_errors(text: str) -> None:
    with pytest.raises(CelError):
        compile_card(text)


def test_moderate_nesting_is_fine() -> None:
    program = compile_card("(" * 20 + "card.memory_gb >= 80" + ")" * 20)
    assert run(program, card={"memory_gb": 80.0}) is True
    assert len("x" * MAX_EXPR_CHARS) == 4000


# --------------------------------------------------------------------------- semantics


@pytest.mark.parametrize("value", [80, 80.0, 96, 141.0])
def test_numbers_compare_whatever_the_yaml_wrote(value: float) -> None:
    for text in ("card.memory_gb >= 80", "card.memory_gb >= 80.0", "80 <= card.memory_gb"):
        assert run(compile_card(text), card={"memory_gb": value}) is True
    assert run(compile_card("card.memory_gb == 80"), card={"memory_gb": value}) is (value == 80)


def test_null_semantics() -> None:
    program = compile_card("card.tflops.bf16 == null || card.tflops.bf16 > 100")
    assert run(program, card={"tflops": {"bf16": None}}) is True
    assert run(program, card={"tflops": {"bf16": 50.0}}) is False
    assert run(program, card={"tflops": {"bf16": 150.0}}) is True
    ne = compile_card("card.export_cn != null")
    assert run(ne, card={"export_cn": None}) is False
    assert run(ne, card={"export_cn": {"status": "not-restricted"}}) is True


def test_errors_follow_cel_commutative_logic() -> None:
    program = compile_card("card.memory_gb / 0 > 1 && card.memory_gb < 10")
    assert run(program, card={"memory_gb": 80.0}) is False  # false && error = false
    failing = run(program, card={"memory_gb": 5.0})  # true && error = error
    assert isinstance(failing, EvalFailure)
    assert "division by zero" in failing.message
    assert not failing
    either = compile_card("card.memory_gb / 0 > 1 || card.memory_gb > 10")
    assert run(either, card={"memory_gb": 80.0}) is True  # error || true = true


def test_memoised_on_the_fields_read() -> None:
    program = compile_card('card.memory_gb >= 80 && workload.kind == "pretrain"')
    for mem in (40.0, 80.0, 40.0, 80.0):
        run(program, card={"memory_gb": mem, "name": str(mem)}, workload={"kind": "pretrain"})
    # Fast-path terms need no memo; evaluated terms are keyed on the fields they read only.
    slow = compile_card("card.memory_gb * 2 >= 160")
    for mem in (40.0, 80.0, 40.0, 80.0, 40.0):
        run(slow, card={"memory_gb": mem, "name": str(mem)})
    assert len(slow.units[0].memo) == 2
    assert run(program, card={"memory_gb": 96.0}, workload={"kind": "lora"}) is False


def test_comprehension_over_requirements() -> None:
    program = compile_predicate(
        'reqs.workloads.exists(w, w.schedule == "night") && workload.schedule == "day"',
        WHEN_VARS,
    )
    night = {"workloads": [{"schedule": "night"}, {"schedule": "day"}]}
    day_only = {"workloads": [{"schedule": "day"}]}
    assert run(program, reqs=night, workload={"schedule": "day"}) is True
    assert run(program, reqs=day_only, workload={"schedule": "day"}) is False


# Property: the fast path (field OP literal) agrees with cel-python on every value.
OPS = ["==", "!=", "<", "<=", ">", ">="]
numbers = st.one_of(
    st.integers(-1000, 1000), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
)


@settings(max_examples=150, deadline=None)
@given(op=st.sampled_from(OPS), value=numbers, literal=numbers, flip=st.booleans())
def test_fast_path_matches_cel_python_for_numbers(
    op: str, value: float, literal: float, flip: bool
) -> None:
    lit = repr(float(literal)) if isinstance(literal, float) else str(literal)
    text = f"{lit} {op} card.memory_gb" if flip else f"card.memory_gb {op} {lit}"
    program = compile_card(text)
    unit = program.units[0]
    assert unit.fast is not None
    bindings = Bindings(facts(card={"memory_gb": value}))
    assert unit.fast(bindings) == unit._evaluate(bindings.context())


@settings(max_examples=100, deadline=None)
@given(
    op=st.sampled_from(["==", "!=", "<", ">="]),
    value=st.one_of(st.none(), st.text(max_size=4), st.sampled_from(["sxm", "pcie"])),
    literal=st.sampled_from(['"sxm"', '"pcie"', '""', '"Z"', "null"]),
)
def test_fast_path_matches_cel_python_for_text_and_null(
    op: str, value: str | None, literal: str
) -> None:
    if literal == "null" and op not in ("==", "!="):
        return
    if op in ("==", "!="):
        text = f"card.notes {op} {literal}"
    else:
        text = f"card.notes != null && card.notes {op} {literal}"
    program = compile_card(text)
    bindings = Bindings(facts(card={"notes": value}))
    for unit in program.units:
        assert unit.fast is not None
        expected = unit._evaluate(bindings.context())
        got = unit.fast(bindings)
        if isinstance(expected, EvalFailure):
            assert isinstance(got, EvalFailure)
        else:
            assert got == expected


@settings(max_examples=60, deadline=None)
@given(value=st.sampled_from(["sxm", "oam", "pcie", None]))
def test_fast_path_matches_cel_python_for_in(value: str | None) -> None:
    program = compile_card('card.notes in ["sxm", "oam"]')
    bindings = Bindings(facts(card={"notes": value}))
    unit = program.units[0]
    assert unit.fast is not None
    assert unit.fast(bindings) == unit._evaluate(bindings.context())


# --------------------------------------------------------------------------- templates


def test_template_placeholders_are_cel() -> None:
    template = compile_template(
        "{workload.model.params_b}B needs {workload.model.params_b * 16} GB; "
        "headroom {params.headroom * 100}%; {{literal}} {workload.deadline_hours}",
        WHEN_VARS,
    )
    bindings = Bindings(
        facts(
            workload={"model": {"params_b": 7.0}, "deadline_hours": None},
            params={"headroom": 0.25},
        )
    )
    assert template.render(bindings) == "7B needs 112 GB; headroom 25%; {literal} unknown"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{workload.model.param_b}", "unknown field 'param_b'"),
        ("{card.memory_gb}", "not available here"),
        ("unclosed {workload.kind", "unclosed '{'"),
        ("stray } brace", "unmatched '}'"),
        ("empty {} here", "empty {}"),
    ],
)
def test_template_errors(text: str, needle: str) -> None:
    with pytest.raises(CelError) as info:
        compile_template(text, WHEN_VARS)
    assert needle in info.value.message


TOKENS = [
    "card",
    "workload",
    "reqs",
    "params",
    ".",
    "memory_gb",
    "kind",
    "model",
    "params_b",
    "tflops",
    "bf16",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "&&",
    "||",
    "!",
    "-",
    "+",
    "*",
    "/",
    "==",
    "!=",
    "<",
    ">=",
    "in",
    "?",
    ":",
    ",",
    "1",
    "80.0",
    '"lora"',
    "null",
    "true",
    "size",
    "exists",
    "w",
    "has",
    "0x1F",
    "'",
    '"',
    "\\",
    "\n",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.text(max_size=30))
def test_any_input_is_a_cel_error_or_a_program(tokens: list[str], noise: str) -> None:
    for text in (" ".join(tokens), "".join(tokens), noise):
        try:
            program = compile_card(text)
        except CelError as exc:
            assert exc.message
            continue
        # Every root the card context declares is bound, as the rules engine binds them:
        # a program may read any of them (`card == reqs` compiles).
        result = run(
            program,
            card={"memory_gb": 80.0, "tflops": {"bf16": None}},
            workload={"kind": "lora", "model": {"params_b": 7.0}},
            reqs={"schedule": "night"},
            params={"headroom": 0.25},
        )
        assert result is True or result is False or isinstance(result, EvalFailure)
