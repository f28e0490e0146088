"""Delegate files (``delegates/*.yaml``) loaded into validated :class:`DelegateSpec`.

A delegate file holds every fact edgepart knows about one LiteRT delegate: the ops it accepts
(with op-version caps), the dtypes it allows per tensor role, rank limits, named constraint
predicates per op, how it claims subgraphs (TFLite epochs with a partition cap and minimum size,
or the Edge TPU's single prefix cut), how LiteRT loads it at run time (:class:`RuntimeLibrary`:
an external delegate library, or a kernel set built into LiteRT, and the host executor that
stands in when the library is absent) and how TFLite's ``benchmark_model`` applies it
(:class:`BenchmarkFlags`: flags and the provider name the tool logs). The format is documented in
``docs/profiles.md``. Files are found by name on the search path (``load_delegate("gpu")``, see
:mod:`edgepart.devices.search_path`); any path to a ``.yaml`` file works too.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgepart.devices import search_path
from edgepart.devices.capability import (
    BoundPredicate,
    bind_predicate,
    has_family,
    predicate_families,
)
from edgepart.devices.host_executors import DEFAULT_EXECUTOR, EXECUTOR_NAMES
from edgepart.devices.roles import ROLES
from edgepart.devices.yaml_files import Loc, check_header, load_yaml, resolve_yaml
from edgepart.errors import ProfileError
from edgepart.ir.dtypes import DType
from edgepart.schema import opnames

__all__ = [
    "BenchmarkFlags",
    "ClaimPolicy",
    "DelegateSpec",
    "OpRule",
    "RuntimeLibrary",
    "delegate_dir",
    "delegate_names",
    "load_delegate",
]

SCHEMA = "edgepart/delegate@1"
TARGETS = ("cpu", "gpu", "dsp", "npu")
METHODS = ("epochs", "prefix_cut", "fallback")
HELPERS = ("graph_partition", "fp16_graph_partition", "xnnpack", "none")
APPLIED = ("user", "default_lazy")
LOADS = ("external", "builtin")
RESERVED_NAMES = ("external",)
"""Not a delegate name: ``external:PATH`` is benchmark_model's nameless external delegate."""
LIBRARY_PLACEHOLDER = "{library}"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")
_LIB_FILE = re.compile(
    r"^(?:lib)?([A-Za-z0-9_+-][A-Za-z0-9_.+-]*?)\.(?:so|dylib|dll)(?:\.[0-9]+)*$"
)
_OPTION_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")
_BM_FLAG = re.compile(r"^--([a-z][a-z0-9_]*)=(.+)$")
_BM_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_PROVIDER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ .-]*$")
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
class RuntimeLibrary:
    """How LiteRT loads a delegate at run time.

    ``load`` is ``external`` (``load_delegate(library, options)``: one of ``files``, found on the
    library path, with ``options``; ``fallback`` runs the partitions when no library is found)
    or ``builtin`` (a kernel set inside LiteRT: the host executor ``executor``).
    """

    load: str = "external"
    files: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)
    fallback: str = DEFAULT_EXECUTOR
    executor: str | None = None

    @property
    def stems(self) -> tuple[str, ...]:
        """The names ``ctypes.util.find_library`` takes (``libedgetpu.so.1`` -> ``edgetpu``)."""
        out = []
        for f in self.files:
            m = _LIB_FILE.match(f)
            if m is not None:
                out.append(m.group(1))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class BenchmarkFlags:
    """How TFLite's ``benchmark_model`` applies a delegate.

    ``flags`` apply it (``{library}`` stands for the library's path on the device); ``provider``
    is the name the tool logs (``Explicitly applied GPU delegate ...``), None for the CPU kernel
    sets, which the tool never reports as applied; ``options`` names the tool flags that
    configure it; ``label`` is its name in ``bench --delegate`` and in result labels (delegates
    the tool applies with the same flags share one).
    """

    flags: tuple[str, ...]
    provider: str | None
    options: tuple[str, ...] = ()
    label: str = ""

    @property
    def needs_library(self) -> bool:
        """The flags take the library's device path (an external delegate for the tool)."""
        return any(LIBRARY_PLACEHOLDER in f for f in self.flags)

    @property
    def flag_names(self) -> tuple[str, ...]:
        """The names of the flags (``use_gpu`` for ``--use_gpu=true``)."""
        return tuple(f[2:].split("=", 1)[0] for f in self.flags)


@dataclass(frozen=True, slots=True)
class DelegateSpec:
    """A validated delegate file."""

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
    predicates: str = ""
    library: RuntimeLibrary = field(default_factory=RuntimeLibrary)
    benchmark_model: BenchmarkFlags | None = None

    def rule(self, op_name: str) -> OpRule | None:
        return self.ops.get(op_name)

    @property
    def host_executor(self) -> str | None:
        """The host executor this delegate is (``xnnpack``, ``builtin``), None for accelerators."""
        return self.library.executor if self.library.load == "builtin" else None


_DEFAULT_REASONS = {
    "unsupported_op": "Operation is not supported.",
    "version": "Max version supported: {max}. Requested version {version}.",
    "tensor": "OP is supported, but tensor type/shape isn't compatible.",
}


def delegate_dir() -> Path:
    """The directory of the shipped delegate files (``<repo>/delegates``)."""
    return search_path.shipped_dir("delegates")


def delegate_names() -> list[str]:
    """Names of the delegate files on the search path (user directories and shipped), sorted."""
    return search_path.names("delegates")


def accelerator_kernels() -> frozenset[str]:
    """Custom ops that are an accelerator delegate's own compiled kernel: a delegate file whose
    target is not the CPU lists its ``kernel_name`` (``edgetpu-custom-op``) under
    ``custom_ops``. No CPU kernel exists for such an op: only that delegate runs it.

    Delegate files on the search path that do not load are skipped here (they are reported
    where they are used).
    """
    return _accelerator_kernels(search_path.search_key())


@functools.lru_cache(maxsize=8)
def _accelerator_kernels(key: tuple[str, ...]) -> frozenset[str]:
    out = set()
    for name in delegate_names():
        try:
            spec = load_delegate(name)
        except ProfileError:
            continue
        name = spec.kernel_name
        if spec.target != "cpu" and name in spec.ops and name not in opnames.BUILTIN_CODES:
            out.add(name)
    return frozenset(out)


def load_delegate(name_or_path: str | os.PathLike[str]) -> DelegateSpec:
    """Load a delegate by name (``"xnnpack"``, found on the search path) or a YAML file by path.

    Raises
    ------
    ProfileError
        Unknown name (listing the known ones), or any invalid field (file and key path).
    """
    return _load_cached(*resolve_yaml(name_or_path, "delegates", "delegate"))


@functools.lru_cache(maxsize=64)
def _load_cached(path: str, mtime: float) -> DelegateSpec:
    return _parse(load_yaml(path), Loc(path))


def _parse(doc: Any, loc: Loc) -> DelegateSpec:
    d = loc.mapping(doc)
    loc.keys(
        d,
        ("schema", "name", "title", "target", "source", "claiming", "ops"),
        (
            "kernel_name",
            "runtime",
            "reasons",
            "checks",
            "context",
            "defaults",
            "custom_ops",
            "predicates",
            "library",
            "benchmark_model",
        ),
    )
    name = check_header(d, loc, SCHEMA)
    if name in RESERVED_NAMES or not _NAME.match(name):
        raise (loc / "name").error(
            f"{name!r} cannot name a delegate; use letters, digits, _ and - (and not "
            f"{', '.join(RESERVED_NAMES)})"
        )
    family = name
    if "predicates" in d:
        family = (loc / "predicates").string(d["predicates"])
        if not has_family(family):
            raise (loc / "predicates").error(
                f"{family!r} is not a predicate module; allowed: {', '.join(predicate_families())}"
            )
    library = _library(d["library"], loc / "library") if "library" in d else RuntimeLibrary()
    bench = None
    if "benchmark_model" in d:
        bench = _benchmark(d["benchmark_model"], loc / "benchmark_model", name)
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
    defaults = _rule("<defaults>", d.get("defaults") or {}, loc / "defaults", None, family)
    ops: dict[str, OpRule] = {}
    ol = loc / "ops"
    for op, body in ol.mapping(d["ops"]).items():
        if op not in opnames.BUILTIN_CODES:
            raise (ol / op).error(
                "unknown builtin operator; use schema names such as CONV_2D "
                "(custom ops go under custom_ops)"
            )
        ops[op] = _rule(op, body if body is not None else {}, ol / op, defaults, family)
    if "custom_ops" in d:
        cl = loc / "custom_ops"
        for op, body in cl.mapping(d["custom_ops"]).items():
            ops[op] = _rule(op, body if body is not None else {}, cl / op, defaults, family)
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
        predicates=family,
        library=library,
        benchmark_model=bench,
    )


def _library(v: Any, loc: Loc) -> RuntimeLibrary:
    d = loc.mapping(v)
    load = (loc / "load").choice(d.get("load"), LOADS) if "load" in d else None
    if load is None:
        raise (loc / "load").error(f"missing required key; allowed: {', '.join(LOADS)}")
    if load == "builtin":
        loc.keys(d, ("load", "executor"), ())
        executor = (loc / "executor").choice(d["executor"], EXECUTOR_NAMES)
        return RuntimeLibrary("builtin", executor=executor, fallback=executor)
    loc.keys(d, ("load",), ("files", "options", "fallback"))
    files = (loc / "files").string_list(d.get("files", []))
    for i, f in enumerate(files):
        if not _LIB_FILE.match(f):
            raise (loc / "files" / i).error(
                f"{f!r} is not a library file name; write one like libfoo.so (no directory: "
                "libraries are found on the library path, or given with --delegate-library)"
            )
    options: dict[str, str] = {}
    ol = loc / "options"
    for k, val in ol.mapping(d.get("options", {})).items():
        if not _OPTION_KEY.match(k):
            raise (ol / k).error("option names may use letters, digits, '_', '.' and '-' only")
        if isinstance(val, bool):
            text = "true" if val else "false"
        elif isinstance(val, (int, float, str)):
            text = str(val)
        else:
            raise (ol / k).error(f"expected a scalar, got {val!r}")
        if not text or any(c in text for c in ";:"):
            raise (ol / k).error(
                f"{text!r}: option values must be non-empty without ';' or ':' (benchmark_model "
                "splits --external_delegate_options on them)"
            )
        options[k] = text
    fallback = (loc / "fallback").choice(d.get("fallback", DEFAULT_EXECUTOR), EXECUTOR_NAMES)
    return RuntimeLibrary("external", files, options, fallback)


def _benchmark(v: Any, loc: Loc, name: str) -> BenchmarkFlags:
    d = loc.mapping(v)
    loc.keys(d, ("flags",), ("provider", "options", "label"))
    fl = loc / "flags"
    flags = fl.string_list(d["flags"])
    if not flags:
        raise fl.error("expected a non-empty list of --name=value flags")
    for i, f in enumerate(flags):
        m = _BM_FLAG.match(f)
        rest = m.group(2).replace(LIBRARY_PLACEHOLDER, "") if m is not None else ""
        if m is None or "{" in rest or "}" in rest:
            raise (fl / i).error(
                f"{f!r} is not a benchmark_model flag; write --name=value (the tool reads only "
                f"that form; {LIBRARY_PLACEHOLDER} stands for the library's path on the device)"
            )
    provider = None
    if "provider" in d:
        provider = (loc / "provider").string(d["provider"])
        if not _PROVIDER.match(provider):
            raise (loc / "provider").error(
                f"{provider!r}: write the name the tool logs, e.g. GPU, NNAPI or EXTERNAL"
            )
    options = (loc / "options").string_list(d.get("options", []))
    for i, o in enumerate(options):
        if not _BM_NAME.match(o):
            raise (loc / "options" / i).error(f"{o!r} is not a flag name such as gpu_backend")
    label = name
    if "label" in d:
        label = (loc / "label").string(d["label"])
        if not _BM_NAME.match(label) or label in RESERVED_NAMES:
            raise (loc / "label").error(
                f"{label!r}: use lower-case letters, digits and _ (and not "
                f"{', '.join(RESERVED_NAMES)})"
            )
    return BenchmarkFlags(flags, provider, options, label)


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


def _rule(name: str, v: Any, loc: Loc, base: OpRule | None, family: str) -> OpRule:
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
            constraints.append(_constraint(item, cl / i, family))
    min_v = (loc / "min_version").integer(d.get("min_version", 1), lo=1)
    max_v = d.get("max_version", base.max_version if base is not None else None)
    if max_v is not None:
        max_v = (loc / "max_version").integer(max_v, lo=min_v)
    max_rank = d.get("max_rank", base.max_rank if base is not None else None)
    if max_rank is not None:
        max_rank = (loc / "max_rank").integer(max_rank, lo=0, hi=16)
    return OpRule(name, min_v, max_v, max_rank, dtypes, tuple(constraints))


def _constraint(item: Any, loc: Loc, family: str) -> BoundPredicate:
    if isinstance(item, str):
        key, arg, has = item, None, False
    elif isinstance(item, Mapping) and len(item) == 1:
        key, arg = next(iter(item.items()))
        has = True
    else:
        raise loc.error(f"expected a predicate name or {{name: argument}}, got {item!r}")
    try:
        return bind_predicate(str(key), arg, has_arg=has, family=family)
    except KeyError as err:
        raise loc.error(str(err.args[0])) from None
    except ValueError as err:
        raise loc.error(str(err)) from None
