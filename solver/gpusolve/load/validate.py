"""Validate a YAML document against its JSON Schema, then build the typed model.

Errors come back as `file:line:column: what is wrong; what is expected`, located by
mapping the JSON path of each error to the YAML node it came from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from gpusolve.errors import InputError, Problem
from gpusolve.load.data import data_dir
from gpusolve.load.seen import VALID, digest
from gpusolve.load.yamlio import Document, JsonPath
from gpusolve.models.common import LocatedValueError

if TYPE_CHECKING:
    import jsonschema

M = TypeVar("M", bound=BaseModel)

_TYPE_WORDS = {
    "number": "a number",
    "integer": "a whole number",
    "string": "text",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping (key: value lines)",
    "null": "nothing (null)",
}


@cache
def _schema_bytes(schema_name: str, model: type[BaseModel]) -> bytes:
    path = data_dir("schemas") / f"{schema_name}.schema.json"
    if path.is_file():
        return path.read_bytes()
    # a checkout before `gpusolve schema --write`; the freshness test keeps them equal
    return json.dumps(model.model_json_schema(by_alias=True)).encode("utf-8")


@cache
def _validator(schema_name: str, model: type[BaseModel]) -> jsonschema.Draft202012Validator:
    import jsonschema  # only for a document not seen valid before (load/seen.py)

    return jsonschema.Draft202012Validator(json.loads(_schema_bytes(schema_name, model)))


def parse_model(doc: Document, model: type[M], schema_name: str) -> M:
    key = digest(_schema_bytes(schema_name, model), doc.data)
    if key not in VALID:
        validator = _validator(schema_name, model)
        errors = _leaf_errors(validator.iter_errors(doc.data), validator.schema)
        problems = [_schema_problem(doc, e) for e in errors]
        if problems:
            raise InputError(_sorted_unique(problems))
        VALID.add(key)
    try:
        return model.model_validate(doc.data)
    except ValidationError as exc:
        raise InputError(_sorted_unique(_pydantic_problems(doc, exc))) from None


def _leaf_errors(
    errors: Iterable[jsonschema.ValidationError], root: Any
) -> Iterable[jsonschema.ValidationError]:
    """For anyOf/oneOf failures, report the most specific branch instead of 'not valid'."""
    for error in errors:
        tagged = _tagged_errors(error, root)
        if tagged is not None:
            yield from _leaf_errors(tagged, root)
        elif error.context:
            typed = _typed_branch_errors(error)
            if typed:
                yield from _leaf_errors(typed, root)
                continue
            from jsonschema.exceptions import best_match

            best = best_match(error.context)
            yield best if best is not None else error
        else:
            yield error


def _typed_branch_errors(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """The errors of the one branch of an anyOf/oneOf whose type the value has, when only
    one has it: `capex_max: -5` against `number | null` is out of the number's range, not
    'expected nothing (null)' (jsonschema's best_match prefers the shallower type error)."""
    branches: dict[Any, list[jsonschema.ValidationError]] = {}
    for sub in error.context or []:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    wrong_type = {
        branch
        for branch, subs in branches.items()
        if any(s.validator == "type" and not s.relative_path for s in subs)
    }
    fitting = [subs for branch, subs in branches.items() if branch not in wrong_type]
    return fitting[0] if len(fitting) == 1 else []


def _tagged_errors(
    error: jsonschema.ValidationError, root: Any
) -> list[jsonschema.ValidationError] | None:
    """A union chosen by a tag (pydantic's `discriminator`, e.g. a workload's `kind`): the
    errors of the branch the tag names, else one error about the tag itself; None for any
    other error."""
    import jsonschema

    schema = error.schema if isinstance(error.schema, dict) else {}
    tag_spec = schema.get("discriminator")
    if error.validator != "oneOf" or not isinstance(tag_spec, dict):
        return None
    if not isinstance(error.instance, dict):
        return None
    key = str(tag_spec["propertyName"])
    mapping: dict[str, str] = tag_spec.get("mapping", {})
    tag = error.instance.get(key)
    where = list(error.absolute_path)
    if key not in error.instance:
        return [
            jsonschema.ValidationError(
                f"{key!r} is a required property", validator="required", path=where
            )
        ]
    refs = [branch.get("$ref") for branch in schema.get("oneOf", [])]
    if not isinstance(tag, str) or tag not in mapping:
        tags = _tags_in_order(root, refs, key) or list(mapping)
        return [
            jsonschema.ValidationError(
                f"{tag!r} is not one of {tags}",
                validator="enum",
                validator_value=tags,
                instance=tag,
                path=[*where, key],
            )
        ]
    index = refs.index(mapping[tag]) if mapping[tag] in refs else None
    return [e for e in error.context or [] if e.relative_schema_path[0] == index]


def _tags_in_order(root: Any, refs: list[Any], key: str) -> list[str]:
    """The tags as the branches declare them (the schema's mapping is sorted by name)."""
    defs = root.get("$defs", {}) if isinstance(root, dict) else {}
    tags: list[str] = []
    for ref in refs:
        prop = defs.get(str(ref).rsplit("/", 1)[-1], {}).get("properties", {}).get(key, {})
        tags += prop.get("enum", [prop["const"]] if "const" in prop else [])
    return tags


def _schema_problem(doc: Document, error: jsonschema.ValidationError) -> Problem:
    path: JsonPath = tuple(error.absolute_path)
    message, hint, at_key = _describe(error)
    if at_key:
        extra = _unknown_keys(error)
        path = (*path, extra[0]) if extra else path
    where = doc.locate(path, key=at_key)
    line, col = where if where else (None, None)
    field = ".".join(str(p) for p in path) or "(top level)"
    return Problem(doc.name, line, col, f"{field}: {message}", hint)


def _describe(error: jsonschema.ValidationError) -> tuple[str, str | None, bool]:
    kind = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    if kind == "additionalProperties":
        extra = _unknown_keys(error)
        allowed = sorted(schema.get("properties", {}))
        names = ", ".join(repr(k) for k in extra)
        return f"unknown field {names}", f"expected one of: {', '.join(allowed)}", True
    if kind == "required":
        missing = str(error.message).split("'")[1] if "'" in str(error.message) else "?"
        return f"missing required field {missing!r}", "add it", False
    if kind == "type":
        wanted = error.validator_value
        wanted_list = wanted if isinstance(wanted, list) else [wanted]
        words = " or ".join(_TYPE_WORDS.get(str(w), str(w)) for w in wanted_list)
        return f"expected {words}, got {_show(error.instance)}", None, False
    if kind == "enum":
        options = ", ".join(repr(v) for v in _as_list(error.validator_value))
        return f"{_show(error.instance)} is not allowed", f"expected one of: {options}", False
    if kind == "const":
        return (
            f"{_show(error.instance)} is not allowed",
            f"expected {error.validator_value!r}",
            False,
        )
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        rel = {
            "minimum": "at least",
            "exclusiveMinimum": "greater than",
            "maximum": "at most",
            "exclusiveMaximum": "less than",
        }[str(kind)]
        return (
            f"{_show(error.instance)} is out of range",
            f"expected {rel} {error.validator_value}",
            False,
        )
    if kind == "pattern":
        desc = schema.get("description")
        return (
            f"{_show(error.instance)} is not in the expected form",
            desc or f"pattern {error.validator_value}",
            False,
        )
    if kind in ("minItems", "maxItems", "minLength", "maxLength"):
        bound = "at least" if kind.startswith("min") else "at most"
        what = "item(s)" if kind.endswith("Items") else "character(s)"
        size = len(error.instance) if isinstance(error.instance, list | str) else "?"
        return (
            f"{_show(error.instance)} has {size} {what}",
            f"expected {bound} {error.validator_value}",
            False,
        )
    return str(error.message), None, False


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _unknown_keys(error: jsonschema.ValidationError) -> list[str]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    known = set(schema.get("properties", {}))
    if isinstance(error.instance, dict):
        return sorted(k for k in error.instance if k not in known)
    return []


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _pydantic_problems(doc: Document, exc: ValidationError) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        # Model-level validators report the enclosing object, or the field they name.
        loc = _data_path(doc.data, (*err["loc"], *error_path(err)))
        where = doc.locate(loc)
        line, col = where if where else (None, None)
        field = ".".join(str(p) for p in loc) or "(top level)"
        message, hint = pydantic_message(err)
        problems.append(Problem(doc.name, line, col, f"{field}: {message}", hint))
    return problems


def error_path(err: Any) -> JsonPath:
    """The path below the validated object that a `LocatedValueError` names (else none)."""
    cause = (err.get("ctx") or {}).get("error")
    return tuple(cause.path) if isinstance(cause, LocatedValueError) else ()


# Pydantic's range errors, in the words the schema check uses for the same bound (a finance
# reader sees "0.05 is 5%" nowhere in "Input should be less than 1").
_RANGE_WORDS = {
    "greater_than": ("gt", "greater than"),
    "greater_than_equal": ("ge", "at least"),
    "less_than": ("lt", "less than"),
    "less_than_equal": ("le", "at most"),
}


def pydantic_message(err: Any) -> tuple[str, str | None]:
    """One pydantic error as `what is wrong` and `what is expected`: a range names the
    value and the bound, a share (a bound of 1) says how it is written."""
    kind = str(err.get("type", ""))
    ctx = err.get("ctx") or {}
    if kind in _RANGE_WORDS:
        key, words = _RANGE_WORDS[kind]
        bound = ctx.get(key)
        hint = f"expected {words} {bound:g}" if isinstance(bound, int | float) else None
        if bound == 1 and key in ("lt", "le") and hint:
            hint += " (a share: 0.05 is 5%)"
        return f"{_show(err.get('input'))} is out of range", hint
    if kind in ("float_parsing", "float_type", "int_parsing", "int_type", "int_from_float"):
        wanted = "a whole number" if kind.startswith("int") else "a number"
        return f"expected {wanted}, got {_show(err.get('input'))}", None
    return str(err["msg"]).removeprefix("Value error, "), None


def _data_path(data: Any, loc: Iterable[Any]) -> JsonPath:
    """Pydantic's error location as a path into the document: without the tag it inserts
    for a tagged union (`workloads.0.inference.tokens` is `workloads.0.tokens`)."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if not isinstance(part, str | int):
            continue
        if isinstance(node, dict) and part not in node and node.get("kind") == part:
            continue
        path.append(part)
        node = node.get(part) if isinstance(node, dict) else _item(node, part)
    return tuple(path)


def _item(node: Any, part: str | int) -> Any:
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def _sorted_unique(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[Any, ...]] = set()
    unique = []
    for p in problems:
        key = (p.line, p.column, p.message)
        if key not in seen:
            seen.add(key)
            unique.append(p)
    return sorted(unique, key=lambda p: (p.line or 0, p.column or 0))
