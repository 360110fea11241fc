"""The CEL environment rules are written against: declared types of variables and fields.

Declared types come from the pydantic models (`Workload`, `Requirements`, `Card`,
`Server`, `ColoOffer`, `CloudOffer`) plus a few documented derived fields, so the static
checker (`check.py`) can reject `card.memory_gbb` or `workload.kind == "full_fine_tune"`
at load time instead of silently evaluating to an error later.

Variables by context:

| where                 | variables                                                  |
|-----------------------|------------------------------------------------------------|
| `when`, `advise`      | `workload`, `reqs`, `params`                               |
| `require/prefer.card` | `card` + `workload`, `reqs`, `params`                      |
| `...server`           | `server` (with `server.gpu`, its card) + the three above   |
| `...offer`            | `offer` (a colocation offer) + the three above             |
| `...cloud`            | `cloud` (with `cloud.gpu`, its card) + the three above     |
| `...deployment`       | `deployment`, `card`, `server`?, `offer`?, `cloud`? + ...  |

(`?` = may be null: a cloud deployment has no server and no offer; an owned one no cloud
offer; an owned one not yet placed at a site has no offer.) The values they hold at
evaluation time are built in `environment.py`.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Mapping
from typing import Annotated, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gpusolve.models.catalog import Card, CloudOffer, ColoOffer, Cpu, Fabric, Server
from gpusolve.models.params import SPECS
from gpusolve.models.requirements import WORKLOAD_KINDS, ModelShape, Requirements, WorkloadBase

Kind = Literal["card", "server", "offer", "cloud", "deployment"]
KINDS: tuple[Kind, ...] = ("card", "server", "offer", "cloud", "deployment")
Path = tuple[str, ...]  # a field from its root variable: ("card", "memory_gb")
ReadMode = Literal["v", "n"]  # what an expression reads of a field: its value, or only nullness

# --------------------------------------------------------------------------- types


class CelType:
    """A static type: num, str, bool, null, list, obj, map or dyn; optionally nullable."""

    __slots__ = ("choices", "doc", "elem", "fields", "kind", "name", "nullable")

    def __init__(
        self,
        kind: str,
        *,
        nullable: bool = False,
        choices: frozenset[str] | None = None,
        elem: CelType | None = None,
        fields: dict[str, CelType] | None = None,
        name: str | None = None,
        doc: str | None = None,
    ) -> None:
        self.kind = kind
        self.nullable = nullable
        self.choices = choices
        self.elem = elem
        self.fields = fields
        self.name = name
        self.doc = doc

    def but(self, *, nullable: bool | None = None, doc: str | None = None) -> CelType:
        return CelType(
            self.kind,
            nullable=self.nullable if nullable is None else nullable,
            choices=self.choices,
            elem=self.elem,
            fields=self.fields,
            name=self.name,
            doc=self.doc if doc is None else doc,
        )

    def describe(self) -> str:
        if self.kind == "num":
            text = "number"
        elif self.kind == "str":
            text = "string"
            if self.choices:
                text += " (one of " + ", ".join(f'"{c}"' for c in sorted(self.choices)) + ")"
        elif self.kind == "bool":
            text = "bool"
        elif self.kind == "null":
            return "null"
        elif self.kind == "list":
            text = "list of " + (self.elem.describe() if self.elem else "values")
        elif self.kind == "obj":
            text = self.name or "object"
        elif self.kind == "map":
            text = "map"
        else:
            text = "any value"
        return text + (" or null" if self.nullable else "")

    def __repr__(self) -> str:
        return f"CelType({self.describe()})"


NUM = CelType("num")
STR = CelType("str")
BOOL = CelType("bool")
NULL = CelType("null", nullable=True)
DYN = CelType("dyn")


def enum(*values: str) -> CelType:
    return CelType("str", choices=frozenset(values))


def list_of(elem: CelType) -> CelType:
    return CelType("list", elem=elem)


def obj(name: str, fields: dict[str, CelType], doc: str | None = None) -> CelType:
    return CelType("obj", fields=fields, name=name, doc=doc)


def _from_annotation(ann: object) -> CelType:
    origin = get_origin(ann)
    if origin is Annotated:
        return _from_annotation(get_args(ann)[0])
    if origin in (Union, types.UnionType):
        args = get_args(ann)
        nullable = type(None) in args
        rest = [a for a in args if a is not type(None)]
        inner = _from_annotation(rest[0]) if len(rest) == 1 else DYN
        return inner.but(nullable=nullable)
    if origin is Literal:
        values = get_args(ann)
        if all(isinstance(v, str) for v in values):
            return enum(*values)
        if all(isinstance(v, bool) for v in values):
            return BOOL
        return DYN
    if origin is list:
        return list_of(_from_annotation(get_args(ann)[0]))
    if origin is dict:
        return CelType("map", elem=_from_annotation(get_args(ann)[1]))
    if ann is bool:
        return BOOL
    if ann in (int, float):
        return NUM
    if ann is str:
        return STR
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        return model_type(ann)
    return DYN


def model_type(
    model: type[BaseModel] | tuple[type[BaseModel], ...],
    *,
    override: Mapping[str, CelType] | None = None,
    extra: Mapping[str, CelType] | None = None,
    name: str | None = None,
) -> CelType:
    """The object type of a pydantic model: its fields (minus `$schema`), overridden/extended.
    Several models (the kinds of a union) give one object with every field of each, the
    first model's declaration of a field winning; `name` then names it."""
    models = model if isinstance(model, tuple) else (model,)
    override = override or {}
    fields: dict[str, CelType] = {}
    infos: dict[str, FieldInfo] = {}
    for m in models:
        for field_name, info in m.model_fields.items():
            infos.setdefault(field_name, info)
    for field_name, info in infos.items():
        if field_name == "schema_":
            continue
        t = override.get(field_name) or _from_annotation(info.annotation)
        if info.description and t.doc is None:
            t = t.but(doc=info.description)
        fields[field_name] = t
    fields.update(extra or {})
    if name is not None:
        return obj(name, fields)
    doc_lines = (models[0].__doc__ or "").strip().splitlines()
    return obj(models[0].__name__, fields, doc=doc_lines[0] if doc_lines else None)


# --------------------------------------------------------------------------- declarations

CARD_TYPE = model_type(Card)
FABRIC_TYPE = model_type(
    Fabric, extra={"total_gbps": NUM.but(doc="nics x nic_gbps, Gbit/s (derived).")}
)
SERVER_TYPE = model_type(
    Server,
    override={"fabric": FABRIC_TYPE, "cpu": model_type(Cpu)},
    extra={"gpu": CARD_TYPE.but(doc="The server's card (derived from `card`).")},
)
OFFER_TYPE = model_type(ColoOffer)
CLOUD_TYPE = model_type(
    CloudOffer, extra={"gpu": CARD_TYPE.but(doc="The instance's card (derived from `card`).")}
)
MODEL_TYPE = model_type(
    ModelShape,
    override={
        "params_b": NUM.but(
            doc="Parameters, billions: given, or resolved by the estimate stage (never null)."
        )
    },
)
WORKLOAD_TYPE = model_type(
    (WorkloadBase, *WORKLOAD_KINDS),
    name="Workload",
    override={"model": MODEL_TYPE},
    extra={"training": BOOL.but(doc="kind is not inference (derived).")},
)
REQS_TYPE = model_type(Requirements, override={"workloads": list_of(WORKLOAD_TYPE)})
PARAMS_TYPE = obj(
    "Params",
    {
        s.name: {bool: BOOL, str: STR}.get(s.kind, NUM).but(doc=f"{s.doc} ({s.source})")
        for s in SPECS
    },
    doc="Resolved parameter values for this workload.",
)

DEPLOYMENT_FIELDS: dict[str, CelType] = {
    "mode": enum("owned", "cloud").but(doc="Bought servers or cloud rental."),
    "nodes": NUM.but(doc="Servers (or cloud instances) one replica spans."),
    "gpus": NUM.but(doc="GPUs in one replica."),
    "gpus_per_node": NUM.but(doc="GPUs used in each node (derived: gpus / nodes)."),
    "tp": NUM.but(doc="Tensor-parallel degree."),
    "pp": NUM.but(doc="Pipeline-parallel degree."),
    "dp": NUM.but(doc="Data-parallel degree."),
    "zero_stage": NUM.but(doc="ZeRO/FSDP sharding stage 0-3."),
    "sharding": enum("ddp", "zero1", "zero2", "zero3", "fsdp_full", "fsdp_hybrid").but(
        nullable=True, doc="Data-parallel sharding of the layout."
    ),
    "checkpointing": enum("none", "selective", "full").but(
        nullable=True, doc="Activation recomputation of the layout."
    ),
    "replicas": NUM.but(doc="Copies of the layout (inference serving), default 1."),
    "memory_per_gpu_gb": NUM.but(doc="Estimated memory used per GPU, GB."),
    "card_memory_gb": NUM.but(doc="Memory the device reports per GPU, GB."),
    "usable_memory_gb": NUM.but(doc="Card memory less the headroom, GB."),
    "mfu": NUM.but(nullable=True, doc="Training: the MFU the step time gives (H12)."),
    "vp": NUM.but(doc="Virtual pipeline stages per rank."),
    "cp": NUM.but(doc="Context-parallel degree."),
    "ep": NUM.but(doc="Expert-parallel degree."),
    "comm_fraction": NUM.but(doc="Communication share of step time."),
    "multi_node": BOOL.but(
        doc="One job, or one inference replica, spans servers and needs a fabric "
        "(derived as nodes > 1 when not given)."
    ),
    "tokens_per_s": NUM.but(
        nullable=True, doc="Training tokens/s, or generated tokens/s for inference."
    ),
    "bottleneck": enum("compute", "memory_bandwidth", "communication").but(nullable=True),
    "schedule": enum("always", "day", "night").but(nullable=True),
    "time_to_train_h": NUM.but(nullable=True, doc="Hours per run (null for inference)."),
    "meets_deadline": BOOL.but(nullable=True, doc="Within deadline_hours (null: none given)."),
    "checkpoint_stall_fraction": NUM.but(
        nullable=True, doc="Share of training time lost to synchronous checkpoint saves."
    ),
}
DEPLOYMENT_TYPE = obj("Deployment", DEPLOYMENT_FIELDS, doc="One layout of one workload.")
DEPLOYMENT_REQUIRED = frozenset(
    {
        "nodes",
        "gpus",
        "tp",
        "pp",
        "dp",
        "memory_per_gpu_gb",
        "card_memory_gb",
        "usable_memory_gb",
        "comm_fraction",
    }
)

BASE_VARIABLES: dict[str, CelType] = {
    "workload": WORKLOAD_TYPE,
    "reqs": REQS_TYPE,
    "params": PARAMS_TYPE,
}

KIND_VARIABLES: dict[str, dict[str, CelType]] = {
    "card": {"card": CARD_TYPE},
    "server": {"server": SERVER_TYPE},
    "offer": {"offer": OFFER_TYPE},
    "cloud": {"cloud": CLOUD_TYPE},
    "deployment": {
        "deployment": DEPLOYMENT_TYPE,
        "card": CARD_TYPE,
        "server": SERVER_TYPE.but(nullable=True),
        "offer": OFFER_TYPE.but(nullable=True),
        "cloud": CLOUD_TYPE.but(nullable=True),
    },
}


def variables_for(context: str) -> dict[str, CelType]:
    """Declared variables for `when` (also advise templates) or a candidate kind."""
    if context == "when":
        return dict(BASE_VARIABLES)
    return {**KIND_VARIABLES[context], **BASE_VARIABLES}


def all_variable_names() -> frozenset[str]:
    names = set(BASE_VARIABLES)
    for kv in KIND_VARIABLES.values():
        names.update(kv)
    return frozenset(names)


def describe_fields(t: CelType, prefix: str, depth: int = 0) -> Iterable[tuple[str, str, str]]:
    """(path, type, doc) rows for documentation (`gpusolve rules fields`)."""
    if t.kind != "obj" or t.fields is None or depth > 2:
        return
    for name, ft in t.fields.items():
        path = f"{prefix}.{name}"
        if ft.kind == "obj" and depth < 2 and not (prefix.endswith(".gpu") or name == "gpu"):
            yield path, ("object" + (" or null" if ft.nullable else "")), ft.doc or ""
            yield from describe_fields(ft, path, depth + 1)
        elif ft.kind == "list" and ft.elem is not None and ft.elem.kind == "obj":
            yield path, f"list of {ft.elem.name}", ft.doc or ""
        else:
            yield path, ft.describe(), ft.doc or ""
