"""The CEL environment rules are written against, and the values they see.

Declared types come from the pydantic models (`Workload`, `Requirements`, `Card`,
`Server`, `ColoOffer`, `CloudOffer`) plus a few documented derived fields, so the static
checker in `cel.py` can reject `card.memory_gbb` or `workload.kind == "full_fine_tune"`
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
offer; an owned one not yet placed at a site has no offer.)

Value conventions:
- Every number from the data is a CEL `double` (as JSON numbers are in CEL), so
  `card.memory_gb >= 80` and `>= 80.0` mean the same whatever the YAML said; comparisons
  and arithmetic mixing an int literal with a double are numeric (see `cel.py`).
- An optional field the input left out is `null`, never absent: test it with
  `x != null` (ordering comparisons on a possibly-null field are rejected at load time
  unless guarded, e.g. `workload.deadline_hours != null && workload.deadline_hours >= 168`).
- `params` holds the resolved parameter values for the workload (defaults, then rules in
  order, then the user's `headroom`); see `gpusolve.params`.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from celpy import celtypes as ct
from pydantic import BaseModel

from gpusolve.models.catalog import Card, CloudOffer, ColoOffer, Cpu, Fabric, Server
from gpusolve.models.requirements import ModelShape, Requirements, Workload
from gpusolve.params import SPECS, Params
from gpusolve.regions import canonical_region

Kind = Literal["card", "server", "offer", "cloud", "deployment"]
KINDS: tuple[Kind, ...] = ("card", "server", "offer", "cloud", "deployment")

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


def _from_annotation(ann: Any) -> CelType:
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
    model: type[BaseModel],
    *,
    override: Mapping[str, CelType] | None = None,
    extra: Mapping[str, CelType] | None = None,
) -> CelType:
    """The object type of a pydantic model: its fields (minus `$schema`), overridden/extended."""
    override = override or {}
    fields: dict[str, CelType] = {}
    for name, info in model.model_fields.items():
        if name == "schema_":
            continue
        t = override.get(name) or _from_annotation(info.annotation)
        if info.description and t.doc is None:
            t = t.but(doc=info.description)
        fields[name] = t
    fields.update(extra or {})
    doc_lines = (model.__doc__ or "").strip().splitlines()
    return obj(model.__name__, fields, doc=doc_lines[0] if doc_lines else None)


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
    Workload,
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


# --------------------------------------------------------------------------- values

Value = Any  # a celpy value (celtypes) or None


def to_cel(value: Any, t: CelType) -> Value:
    """Convert plain Python / pydantic data to CEL values following the declared type."""
    if value is None:
        return None
    kind = t.kind
    if kind == "num":
        return ct.DoubleType(float(value))
    if kind == "str":
        return ct.StringType(value)
    if kind == "bool":
        return ct.BoolType(bool(value))
    if kind == "list":
        elem = t.elem or DYN
        return ct.ListType([to_cel(v, elem) for v in value])
    if kind == "obj":
        assert t.fields is not None
        out: dict[Any, Value] = {}
        if isinstance(value, Mapping):
            for name, ft in t.fields.items():
                out[ct.StringType(name)] = to_cel(value.get(name), ft)
        else:
            for name, ft in t.fields.items():
                out[ct.StringType(name)] = to_cel(getattr(value, name, None), ft)
        return ct.MapType(out)
    if kind == "map":
        elem = t.elem or DYN
        return ct.MapType({ct.StringType(str(k)): to_cel(v, elem) for k, v in value.items()})
    return _dyn(value)


def _dyn(value: Any) -> Value:
    if value is None:
        return None
    if isinstance(value, bool):
        return ct.BoolType(value)
    if isinstance(value, int | float):
        return ct.DoubleType(float(value))
    if isinstance(value, str):
        return ct.StringType(value)
    if isinstance(value, Mapping):
        return ct.MapType({ct.StringType(str(k)): _dyn(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return ct.ListType([_dyn(v) for v in value])
    if isinstance(value, BaseModel):
        return _dyn(value.model_dump(mode="python"))
    raise TypeError(f"cannot give {type(value).__name__} to a rule expression")


# Plain data first (dicts, lists, floats, strings, bools, None), CEL values only when an
# expression actually has to run: memo keys are read from the plain data, and most checks
# are answered from the memo without building a single CEL value.


def _dump(model: BaseModel) -> dict[str, Any]:
    data = model.model_dump(mode="python")
    data.pop("schema_", None)
    return data


def card_plain(card: Card) -> dict[str, Any]:
    return _dump(card)


def server_plain(server: Server, card: Card) -> dict[str, Any]:
    data = _dump(server)
    data["fabric"]["total_gbps"] = server.fabric.total_gbps
    data["gpu"] = card_plain(card)
    return data


def offer_plain(offer: ColoOffer) -> dict[str, Any]:
    data = _dump(offer)
    data["region"] = canonical_region(offer.region) or offer.region
    return data


def cloud_plain(cloud: CloudOffer, card: Card) -> dict[str, Any]:
    data = _dump(cloud)
    data["gpu"] = card_plain(card)
    return data


def estimate_params_b(model: ModelShape) -> float | None:
    """Parameters in billions when the input gives only the architecture.

    12·L·h² (attention and a 4h MLP per layer) + vocabulary embeddings; MoE and SwiGLU
    shapes are left to the estimate stage, whose figure callers pass via `model_sizes`.
    """
    if model.params_b is not None:
        return float(model.params_b)
    if model.layers is not None and model.hidden is not None:
        h = model.hidden
        per_layer = 12 * h * h if model.ffn is None else 4 * h * h + 3 * h * model.ffn
        total = model.layers * per_layer + (model.vocab or 32000) * h
        return total / 1e9
    return None


def workload_plain(workload: Workload, params_b: float) -> dict[str, Any]:
    data = _dump(workload)
    data["model"]["params_b"] = float(params_b)
    data["training"] = workload.kind != "inference"
    return data


def reqs_plain(reqs: Requirements, sizes: Mapping[str, float]) -> dict[str, Any]:
    data = reqs.model_dump(mode="python", exclude={"schema_", "workloads"})
    data["workloads"] = [workload_plain(w, sizes[w.name]) for w in reqs.workloads]
    return data


def params_plain(params: Params) -> dict[str, Any]:
    return {spec.name: getattr(params, spec.name) for spec in SPECS}


def deployment_plain(fields: Mapping[str, Any], mode: str | None = None) -> dict[str, Any]:
    """A layout as rules see it. `multi_node`, `gpus_per_node`, `replicas`, `zero_stage`,
    `vp`, `cp`, `ep` and `mode` are derived when absent; keys rules do not know are ignored.

    Raises ValueError when a required key is missing (a programming error in the caller).
    """
    missing = DEPLOYMENT_REQUIRED - {k for k, v in fields.items() if v is not None}
    if missing:
        raise ValueError(f"deployment facts need: {sorted(missing)}")
    values: dict[str, Any] = dict.fromkeys(DEPLOYMENT_FIELDS)
    values.update(mode=mode or "owned", zero_stage=0, replicas=1, vp=1, cp=1, ep=1)
    values.update({k: v for k, v in fields.items() if k in DEPLOYMENT_FIELDS and v is not None})
    nodes = float(values["nodes"])
    if fields.get("multi_node") is None:
        values["multi_node"] = nodes > 1
    if fields.get("gpus_per_node") is None:
        values["gpus_per_node"] = float(values["gpus"]) / max(nodes, 1.0)
    for name, t in DEPLOYMENT_FIELDS.items():
        if values[name] is None and not t.nullable:
            raise ValueError(f"deployment field {name} may not be null")
    return values


# --------------------------------------------------------------------------- facts


def freeze(value: Any) -> Any:
    """A hashable stand-in for plain data (memo keys)."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


_MISSING = object()


class Facts:
    """The variables of one evaluation context: plain data per root variable, converted to
    CEL values only when an expression has to run, plus a per-path cache of memo keys.

    A Facts may have `parts` (other Facts that own further roots): deployment facts reuse
    the cached facts of their card, server, offer and cloud offer.
    Build them with `ActivationCache` (catalogue items, cached per id) or `deployment_facts`.
    """

    __slots__ = ("_cel", "_keys", "_owners", "_values", "kind", "parts", "plain", "types")

    def __init__(
        self,
        kind: str,
        plain: dict[str, Any],
        types: Mapping[str, CelType],
        parts: tuple[Facts, ...] = (),
    ) -> None:
        self.kind = kind
        self.plain = plain
        self.types = types
        self.parts = parts
        self._cel: dict[str, Value] | None = None
        self._keys: dict[tuple[str, ...], Any] = {}
        self._values: dict[tuple[str, ...], Any] = {}
        self._owners: dict[str, Facts] | None = None

    @property
    def owners(self) -> dict[str, Facts]:
        """Root variable -> the Facts that holds it (this one or one of its parts)."""
        if self._owners is None:
            owners: dict[str, Facts] = dict.fromkeys(self.plain, self)
            for part in self.parts:
                owners.update(part.owners)
            self._owners = owners
        return self._owners

    def with_part(self, part: Facts) -> Facts:
        """A copy in which `part` supplies its roots (e.g. the site of a placed layout)."""
        plain = {k: v for k, v in self.plain.items() if k not in part.plain}
        return Facts(self.kind, plain, self.types, (*self.parts, part))

    @property
    def variables(self) -> dict[str, Value]:
        """CEL values of the roots this Facts owns (built on first use)."""
        if self._cel is None:
            self._cel = {name: to_cel(v, self.types[name]) for name, v in self.plain.items()}
        return self._cel

    def walk(self, path: tuple[str, ...]) -> Any:
        """The plain value at a path (None past a null); cached per path."""
        cached = self._values.get(path, _MISSING)
        if cached is not _MISSING:
            return cached
        value: Any = self.plain.get(path[0])
        for part in path[1:]:
            if not isinstance(value, Mapping):
                value = None
                break
            value = value.get(part)
        self._values[path] = value
        return value

    def key(self, path: tuple[str, ...]) -> Any:
        cached = self._keys.get(path, _MISSING)
        if cached is _MISSING:
            cached = self._keys[path] = freeze(self.walk(path))
        return cached

    def is_null(self, path: tuple[str, ...]) -> bool:
        return self.walk(path) is None

    def __repr__(self) -> str:
        return f"Facts({self.kind}, {sorted(self.plain)})"


def workload_facts(workload: Workload, params_b: float) -> Facts:
    return Facts("workload", {"workload": workload_plain(workload, params_b)}, BASE_VARIABLES)


def reqs_facts(reqs: Requirements, sizes: Mapping[str, float]) -> Facts:
    return Facts("reqs", {"reqs": reqs_plain(reqs, sizes)}, BASE_VARIABLES)


def params_facts(params: Params) -> Facts:
    return Facts("params", {"params": params_plain(params)}, BASE_VARIABLES)


_DEPLOYMENT_TYPES = KIND_VARIABLES["deployment"]


class ActivationCache:
    """Facts for catalogue items, built once per item id (cards are shared by servers)."""

    def __init__(self, cards: Mapping[str, Card]) -> None:
        self._cards = cards
        self._facts: dict[tuple[str, str], Facts] = {}

    def _card(self, card_id: str) -> Card:
        card = self._cards.get(card_id)
        if card is None:
            raise KeyError(f"unknown card {card_id!r}")
        return card

    def _get(self, kind: str, item_id: str, build: Callable[[], dict[str, Any]]) -> Facts:
        facts = self._facts.get((kind, item_id))
        if facts is None:
            types = {kind: KIND_VARIABLES[kind][kind]}
            facts = self._facts[(kind, item_id)] = Facts(kind, {kind: build()}, types)
        return facts

    def card(self, card: Card) -> Facts:
        return self._get("card", card.id, lambda: card_plain(card))

    def server(self, server: Server) -> Facts:
        return self._get("server", server.id, lambda: server_plain(server, self._card(server.card)))

    def offer(self, offer: ColoOffer) -> Facts:
        return self._get("offer", offer.id, lambda: offer_plain(offer))

    def cloud(self, cloud: CloudOffer) -> Facts:
        return self._get("cloud", cloud.id, lambda: cloud_plain(cloud, self._card(cloud.card)))

    def deployment(
        self,
        fields: Mapping[str, Any],
        *,
        card: Card | None,
        server: Server | None = None,
        offer: ColoOffer | None = None,
        cloud: CloudOffer | None = None,
    ) -> Facts:
        """Facts for a layout (cheap: the catalogue parts are shared and cached).

        `card` should always be given; when it is not known, `card` is null and a rule that
        reads it fails with an evaluation error (a require fails closed).
        """
        mode = fields.get("mode") or ("cloud" if cloud is not None else "owned")
        own: dict[str, Any] = {"deployment": deployment_plain(fields, mode)}
        parts: list[Facts] = []
        if card is None:
            own["card"] = None
        else:
            parts.append(self.card(card))
        if server is None:
            own["server"] = None
        else:
            parts.append(self.server(server))
        if offer is None:
            own["offer"] = None
        else:
            parts.append(self.offer(offer))
        if cloud is None:
            own["cloud"] = None
        else:
            parts.append(self.cloud(cloud))
        return Facts("deployment", own, _DEPLOYMENT_TYPES, tuple(parts))


def deployment_facts(
    fields: Mapping[str, Any],
    *,
    card: Card,
    server: Server | None = None,
    offer: ColoOffer | None = None,
    cloud: CloudOffer | None = None,
) -> Facts:
    """Facts for a layout without a shared cache (tests, one-off checks)."""
    return ActivationCache({card.id: card}).deployment(
        fields, card=card, server=server, offer=offer, cloud=cloud
    )
