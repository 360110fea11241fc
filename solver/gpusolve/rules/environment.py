"""The values rules see: catalogue items, workloads and layouts as plain data and CEL values.

Value conventions:
- Every number from the data is a CEL `double` (as JSON numbers are in CEL), so
  `card.memory_gb >= 80` and `>= 80.0` mean the same whatever the YAML said; comparisons
  and arithmetic mixing an int literal with a double are numeric (see `operators.py`).
- An optional field the input left out is `null`, never absent: test it with
  `x != null` (ordering comparisons on a possibly-null field are rejected at load time
  unless guarded, e.g. `workload.deadline_hours != null && workload.deadline_hours >= 168`).
- `params` holds the resolved parameter values for the workload (defaults, then rules in
  order, then the user's `headroom`); see `gpusolve.models.params`.

Plain data first, CEL values only when an expression has to run (`Facts`). The declared
types live in `declarations.py`; the names other modules read here are re-exported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gpusolve.models.catalog import Card, CloudOffer, ColoOffer, Server
from gpusolve.models.params import SPECS, Params
from gpusolve.models.regions import canonical_region
from gpusolve.models.requirements import WORKLOAD_KINDS, ModelShape, Requirements, Workload
from gpusolve.rules.declarations import BASE_VARIABLES as BASE_VARIABLES
from gpusolve.rules.declarations import DEPLOYMENT_FIELDS, DEPLOYMENT_REQUIRED, DYN, CelType
from gpusolve.rules.declarations import KIND_VARIABLES as KIND_VARIABLES
from gpusolve.rules.declarations import KINDS as KINDS
from gpusolve.rules.declarations import describe_fields as describe_fields
from gpusolve.rules.declarations import variables_for as variables_for

if TYPE_CHECKING:
    from celpy import celtypes as ct

    Value = ct.Value  # a celpy value (celtypes) or None

# --------------------------------------------------------------------------- values
# cel-python is imported only where CEL values are built: a run whose every evaluation is
# answered from plain data or from the kept memos (`compiled.py`) never loads it.


def to_cel(value: Any, t: CelType) -> Value:
    """Convert plain Python / pydantic data to CEL values following the declared type."""
    from celpy import celtypes as ct

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
        out: dict[ct.Value, Value] = {}
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
    from celpy import celtypes as ct

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
    # Rules see one Workload shape: a field of another kind reads as that kind's default.
    for kind in WORKLOAD_KINDS:
        for name, info in kind.model_fields.items():
            if name not in data:
                data[name] = info.get_default(call_default_factory=True)
    data["model"]["params_b"] = float(params_b)
    data["training"] = workload.is_training
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


def freeze(value: object) -> Hashable:
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
        self._keys: dict[tuple[str, ...], Hashable] = {}
        self._values: dict[tuple[str, ...], object] = {}
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

    def walk(self, path: tuple[str, ...]) -> object:
        """The plain value at a path (None past a null); cached per path."""
        cached = self._values.get(path, _MISSING)
        if cached is not _MISSING:
            return cached
        value: object = self.plain.get(path[0])
        for part in path[1:]:
            if not isinstance(value, Mapping):
                value = None
                break
            value = value.get(part)
        self._values[path] = value
        return value

    def key(self, path: tuple[str, ...]) -> Hashable:
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
        # An absent part is a null of the deployment's own; a present one shares its facts.
        found = {
            "card": None if card is None else self.card(card),
            "server": None if server is None else self.server(server),
            "offer": None if offer is None else self.offer(offer),
            "cloud": None if cloud is None else self.cloud(cloud),
        }
        own.update((name, None) for name, part in found.items() if part is None)
        parts = tuple(part for part in found.values() if part is not None)
        return Facts("deployment", own, _DEPLOYMENT_TYPES, parts)


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
