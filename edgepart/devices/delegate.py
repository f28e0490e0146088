"""Delegate capability files (``delegates/*.yaml``) loaded into validated :class:`DelegateSpec`.

A delegate file lists the ops a LiteRT delegate accepts (with op-version caps), the dtypes it
allows per tensor role, rank limits, named constraint predicates per op, and how it claims
subgraphs (TFLite epochs with a partition cap and minimum size, or the Edge TPU's single prefix
cut). The format is documented in ``docs/profiles.md``. Shipped files are found by name
(``load_delegate("gpu")``); any path to a ``.yaml`` file works too.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepart.devices._yaml import Loc, check_header, load_yaml, resolve_yaml, yaml_names
from edgepart.devices.capability import BoundPredicate, bind_predicate
from edgepart.devices.roles import ROLES
from edgepart.devices.search_path import shipped_dir
from edgepart.ir.dtypes import DType
from edgepart.schema import opnames

__all__ = [
    "ClaimPolicy",
    "DelegateSpec",
    "OpRule",
    "delegate_dir",
    "delegate_names",
    "load_delegate",
]

SCHEMA = "edgepart/delegate@1"
TARGETS = ("cpu", "gpu", "dsp", "npu")
METHODS = ("epochs", "prefix_cut", "fallback")
HELPERS = ("graph_partition", "fp16_graph_partition", "xnnpack", "none")
APPLIED = ("user", "default_lazy")
_DTYPE_NAMES = [d.name for d in DType]


@dataclass(frozen=True, slots=True)
class ClaimPolicy:
    """How a delegate turns its supported ops into partitions.

    ``greedy`` None means "as the interpreter is configured" (TFLite's delegate clustering flag);
    ``max_delegated_partitions`` 0 means no cap.
    """

    method: str = "epochs"
    helper: str = "graph_partition"
    greedy: bool | None = None
    max_delegated_partitions: int = 0
    min_nodes_per_partition: int = 0
    applied: str = "user"
    allow_dynamic_tensors: bool = True


@dataclass(frozen=True, slots=True)
class OpRule:
    """What a delegate requires of one op kind (merged with the file's defaults)."""

    name: str
    min_version: int = 1
    max_version: int | None = None
    max_rank: int | None = None
    dtypes: Mapping[str, frozenset[DType]] = field(default_factory=dict)
    constraints: tuple[BoundPredicate, ...] = ()


@dataclass(frozen=True, slots=True)
class DelegateSpec:
    """A validated delegate capability file."""

    name: str
    title: str
    kernel_name: str
    target: str
    runtime: str
    source: str
    policy: ClaimPolicy
    ops: Mapping[str, OpRule]
    reasons: Mapping[str, str]
    dtype_check_constants: bool = True
    rank_check_constants: bool = True
    context: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""

    def rule(self, op_name: str) -> OpRule | None:
        return self.ops.get(op_name)


_DEFAULT_REASONS = {
    "unsupported_op": "Operation is not supported.",
    "version": "Max version supported: {max}. Requested version {version}.",
    "tensor": "OP is supported, but tensor type/shape isn't compatible.",
}


def delegate_dir() -> Path:
    """The directory of the shipped delegate files (``<repo>/delegates``)."""
    return shipped_dir("delegates", "EDGEPART_DELEGATES_DIR")


def delegate_names() -> list[str]:
    """Names of the shipped delegate files."""
    return yaml_names(delegate_dir())


def load_delegate(name_or_path: str | os.PathLike[str]) -> DelegateSpec:
    """Load a shipped delegate by name (``"xnnpack"``) or any delegate YAML file by path.

    Raises
    ------
    ProfileError
        Unknown name (listing the shipped ones), or any invalid field (file and key path).
    """
    return _load_cached(*resolve_yaml(name_or_path, delegate_dir(), "delegate", "delegate"))


@functools.lru_cache(maxsize=64)
def _load_cached(path: str, mtime: float) -> DelegateSpec:
    return _parse(load_yaml(path), Loc(path))


def _parse(doc: Any, loc: Loc) -> DelegateSpec:
    d = loc.mapping(doc)
    loc.keys(
        d,
        ("schema", "name", "title", "target", "source", "claiming", "ops"),
        ("kernel_name", "runtime", "reasons", "checks", "context", "defaults", "custom_ops"),
    )
    name = check_header(d, loc, SCHEMA)
    policy = _policy(d["claiming"], loc / "claiming")
    reasons = dict(_DEFAULT_REASONS)
    if "reasons" in d:
        rl = loc / "reasons"
        r = rl.mapping(d["reasons"])
        rl.keys(r, (), tuple(_DEFAULT_REASONS))
        reasons.update({k: (rl / k).string(v) for k, v in r.items()})
    dtype_consts, rank_consts = True, True
    if "checks" in d:
        cl = loc / "checks"
        c = cl.mapping(d["checks"])
        cl.keys(c, (), ("dtype_constants", "rank_constants"))
        dtype_consts = (cl / "dtype_constants").boolean(c.get("dtype_constants", True))
        rank_consts = (cl / "rank_constants").boolean(c.get("rank_constants", True))
    context: dict[str, Any] = {}
    if "context" in d:
        cx = loc / "context"
        for k, v in cx.mapping(d["context"]).items():
            if not isinstance(v, (bool, int, float, str)):
                raise (cx / k).error(f"expected a scalar, got {v!r}")
            context[k] = v
    defaults = _rule("<defaults>", d.get("defaults") or {}, loc / "defaults", None)
    ops: dict[str, OpRule] = {}
    ol = loc / "ops"
    for op, body in ol.mapping(d["ops"]).items():
        if op not in opnames.BUILTIN_CODES:
            raise (ol / op).error(
                "unknown builtin operator; use schema names such as CONV_2D "
                "(custom ops go under custom_ops)"
            )
        ops[op] = _rule(op, body if body is not None else {}, ol / op, defaults)
    if "custom_ops" in d:
        cl = loc / "custom_ops"
        for op, body in cl.mapping(d["custom_ops"]).items():
            ops[op] = _rule(op, body if body is not None else {}, cl / op, defaults)
    return DelegateSpec(
        name=name,
        title=(loc / "title").string(d["title"]),
        kernel_name=(loc / "kernel_name").string(d.get("kernel_name", name)),
        target=(loc / "target").choice(d["target"], TARGETS),
        runtime=(loc / "runtime").string(d.get("runtime", "LiteRT")),
        source=(loc / "source").string(d["source"]),
        policy=policy,
        ops=ops,
        reasons=reasons,
        dtype_check_constants=dtype_consts,
        rank_check_constants=rank_consts,
        context=context,
        path=loc.file,
    )


def _policy(v: Any, loc: Loc) -> ClaimPolicy:
    d = loc.mapping(v)
    loc.keys(
        d,
        ("method",),
        (
            "helper",
            "greedy",
            "max_delegated_partitions",
            "min_nodes_per_partition",
            "applied",
            "allow_dynamic_tensors",
        ),
    )
    method = (loc / "method").choice(d["method"], METHODS)
    greedy_v = d.get("greedy", "interpreter")
    if greedy_v == "interpreter":
        greedy: bool | None = None
    else:
        greedy = (loc / "greedy").boolean(greedy_v) if not isinstance(greedy_v, str) else None
        if isinstance(greedy_v, str):
            raise (loc / "greedy").error(
                f"{greedy_v!r} is not allowed; allowed: true, false, interpreter"
            )
    return ClaimPolicy(
        method=method,
        helper=(loc / "helper").choice(d.get("helper", "graph_partition"), HELPERS),
        greedy=greedy,
        max_delegated_partitions=(loc / "max_delegated_partitions").integer(
            d.get("max_delegated_partitions", 0), lo=0
        ),
        min_nodes_per_partition=(loc / "min_nodes_per_partition").integer(
            d.get("min_nodes_per_partition", 0), lo=0
        ),
        applied=(loc / "applied").choice(d.get("applied", "user"), APPLIED),
        allow_dynamic_tensors=(loc / "allow_dynamic_tensors").boolean(
            d.get("allow_dynamic_tensors", True)
        ),
    )


def _rule(name: str, v: Any, loc: Loc, base: OpRule | None) -> OpRule:
    d = loc.mapping(v)
    loc.keys(d, (), ("min_version", "max_version", "max_rank", "dtypes", "constraints", "note"))
    if "note" in d:
        (loc / "note").string(d["note"])
    dtypes = dict(base.dtypes) if base is not None else {}
    if "dtypes" in d:
        dl = loc / "dtypes"
        for role, types in dl.mapping(d["dtypes"]).items():
            if role not in ROLES:
                raise (dl / role).error(f"unknown tensor role; allowed: {', '.join(ROLES)}")
            names = (dl / role).string_list(types, _DTYPE_NAMES)
            dtypes[role] = frozenset(DType[n] for n in names)
    constraints = list(base.constraints) if base is not None else []
    if "constraints" in d:
        cl = loc / "constraints"
        for i, item in enumerate(cl.sequence(d["constraints"])):
            constraints.append(_constraint(item, cl / i))
    min_v = (loc / "min_version").integer(d.get("min_version", 1), lo=1)
    max_v = d.get("max_version", base.max_version if base is not None else None)
    if max_v is not None:
        max_v = (loc / "max_version").integer(max_v, lo=min_v)
    max_rank = d.get("max_rank", base.max_rank if base is not None else None)
    if max_rank is not None:
        max_rank = (loc / "max_rank").integer(max_rank, lo=0, hi=16)
    return OpRule(name, min_v, max_v, max_rank, dtypes, tuple(constraints))


def _constraint(item: Any, loc: Loc) -> BoundPredicate:
    if isinstance(item, str):
        key, arg, has = item, None, False
    elif isinstance(item, Mapping) and len(item) == 1:
        key, arg = next(iter(item.items()))
        has = True
    else:
        raise loc.error(f"expected a predicate name or {{name: argument}}, got {item!r}")
    try:
        return bind_predicate(str(key), arg, has_arg=has)
    except KeyError as err:
        raise loc.error(str(err.args[0])) from None
    except ValueError as err:
        raise loc.error(str(err)) from None
