"""Capability checks as data: ``Support(ok, reason)``, a registry of named predicates, combinators.

A delegate's YAML file names its per-op constraints (``constraints: [softmax_beta_is_1,
{stride_le: 3}]``). Each name refers to a small function registered with :func:`predicate` in a
module of :mod:`edgepart.devices.predicates`; it receives an :class:`OpView` (the op plus its
tensors) and the YAML argument, and returns a :class:`Support` whose ``reason`` says, in TFLite's
words where TFLite has some, why the op is refused. Predicates are bound (argument checked) when
the YAML is loaded, so a typo in a delegate file fails at load time with the key path, not
halfway through a claim.

Predicates come in families, one module each: ``common`` (generic, visible to every delegate)
and one per delegate, found by the delegate's name (``xnnpack`` imports
``edgepart/devices/predicates/xnnpack.py``) when a file of that name is loaded, the way tinygrad
finds a device's module by its name. A file sees the generic predicates and its family's.

>>> Support(False, "beta must be 1").reason
'beta must be 1'
>>> sorted(n for n in predicate_names() if n.startswith("softmax"))
['softmax_beta_is_1']
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Subgraph, Tensor
from edgepart.ir.values import Options

__all__ = [
    "COMMON",
    "OK",
    "BoundPredicate",
    "OpView",
    "PredicateInfo",
    "Support",
    "all_of",
    "any_of",
    "bind_predicate",
    "get_predicate",
    "has_family",
    "load_family",
    "predicate",
    "predicate_families",
    "predicate_names",
]


@dataclass(frozen=True, slots=True)
class Support:
    """The verdict of a capability check: ``ok``, and if not, why (TFLite's wording if any)."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


OK = Support(True)


class MissingOperand(IndexError):
    """A predicate read an input or output the op does not have (see :class:`Operands`)."""


class Operands(tuple[int, ...]):
    """An op's input or output tensor indices; reading one the op lacks raises
    :class:`MissingOperand`, which a predicate call turns into a refusal (TFLite's delegates
    check the operand count first and refuse the op; its kernels would fail to prepare it)."""

    side: str = "input"

    def __getitem__(self, k: Any) -> Any:
        try:
            return super().__getitem__(k)
        except IndexError:
            raise MissingOperand(f"{self.side} {k} is missing ({len(self)} {self.side}s)") from None


class _Outputs(Operands):
    side = "output"


class OpView:
    """What a predicate sees: one op of a subgraph, its tensors, and the claiming context.

    ``static`` holds tensors a delegate treats as compile-time constants although no buffer backs
    them (XNNPACK's "quasi-static" outputs of DEQUANTIZE/DENSIFY of constants). ``context`` carries
    delegate options (e.g. ``nnapi_api_level``). Tensors are built on first use and cached.
    """

    __slots__ = ("_cache", "context", "index", "inputs", "name", "outputs", "sg", "static")

    def __init__(
        self,
        sg: Subgraph,
        index: int,
        *,
        inputs: Sequence[int] | None = None,
        static: frozenset[int] = frozenset(),
        context: Mapping[str, Any] | None = None,
    ) -> None:
        self.sg = sg
        self.index = index
        self.name = sg.op_name(index)
        self.inputs: tuple[int, ...] = Operands(
            inputs if inputs is not None else sg.op_inputs.row_tuple(index)
        )
        self.outputs: tuple[int, ...] = _Outputs(sg.op_outputs.row_tuple(index))
        self.static = static
        self.context: Mapping[str, Any] = context or {}
        self._cache: dict[int, Tensor] = {}

    @property
    def version(self) -> int:
        return int(self.sg.op_version[self.index])

    @property
    def options(self) -> Options | None:
        return self.sg.op_options[self.index]

    def option(self, key: str, default: Any = None) -> Any:
        """One builtin option (enum fields are names such as ``"RELU6"``)."""
        opts = self.options
        if opts is None:
            return default
        return opts.get(key, default)

    def tensor(self, t: int) -> Tensor:
        v = self._cache.get(t)
        if v is None:
            v = self._cache[t] = self.sg.tensor(t)
        return v

    def input(self, k: int) -> Tensor | None:
        """Input ``k``, or None if it is omitted (-1) or absent."""
        if k >= len(self.inputs) or self.inputs[k] < 0:
            return None
        return self.tensor(self.inputs[k])

    def output(self, k: int) -> Tensor | None:
        if k >= len(self.outputs) or self.outputs[k] < 0:
            return None
        return self.tensor(self.outputs[k])

    def is_static(self, t: int) -> bool:
        """Constant (buffer-backed) or quasi-static in this claiming context."""
        return t >= 0 and (bool(self.sg.tensor_is_constant[t]) or t in self.static)

    def const_values(self, t: int) -> np.ndarray | None:
        """The values of a constant tensor (None for non-constants or unviewable dtypes)."""
        if t < 0 or not self.sg.tensor_is_constant[t]:
            return None
        ten = self.tensor(t)
        if ten.dtype.numpy is None or ten.sparsity is not None:
            return None
        try:
            return ten.numpy()
        except ValueError:
            return None

    def dtype(self, t: int) -> DType:
        return DType(int(self.sg.tensor_dtype[t]))

    def shape(self, t: int) -> tuple[int, ...]:
        return self.sg.tensor_shape.row_tuple(t)


PredicateFn = Callable[..., Support]


@dataclass(frozen=True, slots=True)
class PredicateInfo:
    """A registered predicate: its function and what YAML argument it takes."""

    name: str
    fn: PredicateFn
    arg: Any  # None (no argument), a type, a tuple of types, or a dict {key: type}
    doc: str
    choices: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class BoundPredicate:
    """A predicate with its YAML argument applied; calling it checks one op."""

    name: str
    fn: PredicateFn
    arg: Any = None
    has_arg: bool = False
    label: str = field(default="")

    def __call__(self, op: OpView) -> Support:
        try:
            if self.has_arg:
                return self.fn(op, self.arg)
            return self.fn(op)
        except MissingOperand as err:
            return Support(False, f"{op.name}: {err}; the op is malformed")


COMMON = "common"
"""The family of generic predicates, visible to every delegate file."""
_PACKAGE = "edgepart.devices.predicates"
_FAMILY_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_PREDICATES: dict[str, dict[str, PredicateInfo]] = {}  # family -> name -> predicate
_FAMILY_OF: dict[str, str] = {}  # name -> family (names are unique across families)
_LOOKED_UP: set[str] = set()


def _family_of(module: str) -> str:
    prefix = _PACKAGE + "."
    rest = module[len(prefix) :] if module.startswith(prefix) else ""
    # Predicates registered by code outside the package (a program using the API) are generic.
    return rest if rest and "." not in rest else COMMON


def predicate(
    name: str, *, arg: Any = None, choices: Iterable[str] | None = None
) -> Callable[[PredicateFn], PredicateFn]:
    """Register ``fn(op, [arg]) -> Support`` under ``name`` (a decorator).

    ``arg`` describes the YAML argument: None for a bare name, a type such as ``int`` or
    ``list`` for ``{name: value}``, or a dict of keyword types for ``{name: {k: v}}``. The
    family is the module's name inside :mod:`edgepart.devices.predicates` (``common`` for
    code elsewhere).
    """

    def deco(fn: PredicateFn) -> PredicateFn:
        if name in _FAMILY_OF:
            raise ValueError(f"predicate {name!r} registered twice")
        doc = (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else ""
        family = _family_of(fn.__module__)
        _FAMILY_OF[name] = family
        _PREDICATES.setdefault(family, {})[name] = PredicateInfo(
            name, fn, arg, doc, frozenset(choices) if choices is not None else None
        )
        return fn

    return deco


def predicate_families() -> list[str]:
    """The delegate-specific predicate modules of :mod:`edgepart.devices.predicates`, sorted.

    Found in the package folder, not listed anywhere.
    """
    pkg = importlib.import_module(_PACKAGE)
    return sorted(
        m.name
        for m in pkgutil.iter_modules(pkg.__path__)
        if not m.name.startswith("_") and m.name != COMMON
    )


def has_family(family: str) -> bool:
    """Whether the package has a predicate module named ``family``."""
    if not _FAMILY_NAME.match(family):
        return False
    return importlib.util.find_spec(f"{_PACKAGE}.{family}") is not None


def load_family(family: str | None = None) -> None:
    """Import the generic predicates and, if the package has one, the module ``family``.

    Only modules of :mod:`edgepart.devices.predicates` are ever imported (the name is checked
    to be a plain module name first), so a delegate file cannot make edgepart load code from
    anywhere else.
    """
    for fam in (COMMON, family):
        if fam is None or fam in _LOOKED_UP:
            continue
        _LOOKED_UP.add(fam)
        if has_family(fam):
            importlib.import_module(f"{_PACKAGE}.{fam}")


def _visible(family: str | None) -> dict[str, PredicateInfo]:
    load_family(family)
    out = dict(_PREDICATES.get(COMMON, {}))
    if family is not None:
        out.update(_PREDICATES.get(family, {}))
    return out


def predicate_names(family: str | None = None) -> list[str]:
    """The predicate names a delegate of ``family`` may use (the generic ones and its own)."""
    return sorted(_visible(family))


def get_predicate(name: str, family: str | None = None) -> PredicateInfo:
    """The predicate ``name`` as a delegate of ``family`` sees it.

    A miss raises ``KeyError`` listing the valid names (and, for a predicate of another
    family, the ``predicates:`` key that makes it visible).
    """
    visible = _visible(family)
    if name in visible:
        return visible[name]
    for fam in predicate_families():
        load_family(fam)
    hint = ""
    other = _FAMILY_OF.get(name)
    if other is not None:
        hint = f" ({name!r} is a {other} predicate: set `predicates: {other}` in the file)"
    raise KeyError(
        f"unknown predicate {name!r}{hint}; valid names: {', '.join(sorted(visible))}"
    ) from None


def bind_predicate(
    name: str, arg: Any = None, *, has_arg: bool = False, family: str | None = None
) -> BoundPredicate:
    """Check ``arg`` against the predicate's declared argument and bind it.

    Raises ``KeyError`` for unknown names and ``ValueError`` (with what is allowed) for bad args.
    """
    info = get_predicate(name, family)
    spec = info.arg
    if spec is None:
        if has_arg:
            raise ValueError(f"predicate {name!r} takes no argument; write it as a bare name")
        return BoundPredicate(name, info.fn, None, False, name)
    if not has_arg:
        raise ValueError(f"predicate {name!r} needs an argument: write {{{name}: <{_spec(spec)}>}}")
    value = _check_arg(name, spec, arg, info.choices)
    return BoundPredicate(name, info.fn, value, True, f"{name}={arg!r}")


def _spec(spec: Any) -> str:
    if isinstance(spec, dict):
        return "{" + ", ".join(f"{k}: {_spec(v)}" for k, v in spec.items()) + "}"
    if isinstance(spec, tuple):
        return " or ".join(_spec(s) for s in spec)
    return getattr(spec, "__name__", str(spec))


def _check_arg(name: str, spec: Any, arg: Any, choices: frozenset[str] | None) -> Any:
    if isinstance(spec, dict):
        if not isinstance(arg, dict):
            raise ValueError(f"predicate {name!r} expects a mapping {_spec(spec)}, got {arg!r}")
        unknown = sorted(set(arg) - set(spec))
        if unknown:
            raise ValueError(
                f"predicate {name!r} has no parameter {unknown[0]!r}; "
                f"allowed: {', '.join(sorted(spec))}"
            )
        return {k: _check_arg(f"{name}.{k}", spec[k], v, choices) for k, v in arg.items()}
    types = spec if isinstance(spec, tuple) else (spec,)
    if isinstance(arg, bool) and bool not in types:
        raise ValueError(f"predicate {name!r} expects {_spec(spec)}, got {arg!r}")
    if float in types and isinstance(arg, int) and not isinstance(arg, bool):
        arg = float(arg)
    if not isinstance(arg, types):
        raise ValueError(f"predicate {name!r} expects {_spec(spec)}, got {arg!r}")
    if isinstance(arg, list):
        if choices is not None:
            bad = [a for a in arg if a not in choices]
            if bad:
                raise ValueError(
                    f"predicate {name!r}: {bad[0]!r} is not allowed; "
                    f"allowed: {', '.join(sorted(choices))}"
                )
        return tuple(arg)
    if choices is not None and isinstance(arg, str) and arg not in choices:
        raise ValueError(
            f"predicate {name!r}: {arg!r} is not allowed; allowed: {', '.join(sorted(choices))}"
        )
    return arg


def all_of(*preds: Callable[[OpView], Support]) -> Callable[[OpView], Support]:
    """A predicate that holds when every one holds; the first failure's reason is kept."""

    def check(op: OpView) -> Support:
        for p in preds:
            s = p(op)
            if not s.ok:
                return s
        return OK

    return check


def any_of(*preds: Callable[[OpView], Support]) -> Callable[[OpView], Support]:
    """A predicate that holds when at least one holds; otherwise all reasons, joined."""

    def check(op: OpView) -> Support:
        reasons = []
        for p in preds:
            s = p(op)
            if s.ok:
                return OK
            reasons.append(s.reason)
        return Support(False, " and ".join(r for r in reasons if r) or "no alternative holds")

    return check
