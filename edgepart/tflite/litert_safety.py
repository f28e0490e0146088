"""What LiteRT cannot survive: checks run on a model before any LiteRT interpreter sees it.

LiteRT trusts its input in places; these models crash the process (SIGSEGV) instead of raising:

* the custom ops its builtin resolver registers and whose kernels parse their options as a
  FlexBuffer map without verifying it (``AudioSpectrogram``, ``Mfcc``,
  ``TFLite_Detection_PostProcess``, ``NumericVerify``): absent options dereference a null
  pointer, malformed ones read out of bounds. Their options must be a well-formed map of
  scalars (checked here the way a verifier would: every offset, key and value inside the
  buffer) holding every key the kernel reads;
* subgraphs that call themselves, directly or through others (``WHILE``, ``IF``,
  ``CALL_ONCE``, composites): preparing them recurses until the stack overflows.

Everything that reaches an interpreter goes through :func:`check_model` first: partitions in
:mod:`edgepart.runtime.executors`, the source model under ``run --verify``, the models
``profile`` times. Crashes nobody has found yet are contained by running ``--verify`` and
``profile`` in a child process (:mod:`edgepart.runtime.isolate`).
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence

from flatbuffers import flexbuffers

from edgepart.errors import UnsupportedOpError
from edgepart.ir.graph import Model, subgraph_refs
from edgepart.schema.opnames import CALLING_BUILTINS, CUSTOM

__all__ = [
    "FLEX_OPTION_KEYS",
    "check_custom_options",
    "check_model",
    "check_recursion",
    "custom_option_values",
]

FLEX_OPTION_KEYS: dict[str, tuple[str, ...]] = {
    "AudioSpectrogram": ("window_size", "stride", "magnitude_squared"),
    "Mfcc": (
        "upper_frequency_limit",
        "lower_frequency_limit",
        "filterbank_channel_count",
        "dct_coefficient_count",
    ),
    "TFLite_Detection_PostProcess": (
        "max_detections",
        "max_classes_per_detection",
        "nms_score_threshold",
        "nms_iou_threshold",
        "num_classes",
        "y_scale",
        "x_scale",
        "h_scale",
        "w_scale",
    ),
    "NumericVerify": ("tolerance", "log_if_failed"),
}
"""Custom ops LiteRT's builtin resolver registers, and the options keys each kernel reads
(``tensorflow/lite/kernels/{audio_spectrogram,mfcc,detection_postprocess,numeric_verify}.cc``)."""


def check_model(model: Model, where: str) -> None:
    """Refuse a model LiteRT would crash on (see the module docstring).

    Raises
    ------
    UnsupportedOpError
        One line naming the subgraph, op and what is wrong.
    """
    for s, sg in enumerate(model.subgraphs):
        for i in range(sg.num_ops):
            code = sg.opcodes[int(sg.op_opcode[i])]
            if code.builtin == CUSTOM and code.custom_code in FLEX_OPTION_KEYS:
                problem = check_custom_options(code.custom_code, sg.op_custom_options[i])
                if problem is not None:
                    raise UnsupportedOpError(
                        f"{where}: subgraph {s} {sg.describe_op(i)}: {problem}; LiteRT's kernel "
                        "would crash on these options (re-export the model)"
                    )
    check_recursion(model, where)


def check_recursion(model: Model, where: str) -> None:
    """Refuse subgraphs that call themselves, directly or through other subgraphs."""
    calls: list[list[int]] = [[] for _ in model.subgraphs]
    for s, sg in enumerate(model.subgraphs):
        codes = [c.builtin for c in sg.opcodes]
        for i in range(sg.num_ops):
            if codes[int(sg.op_opcode[i])] in CALLING_BUILTINS:
                refs = subgraph_refs(sg.op_options[i]) + subgraph_refs(sg.op_options2[i])
                calls[s].extend(r for r in refs if 0 <= r < len(calls))
    cycle = _find_cycle(calls)
    if cycle is not None:
        path = " -> ".join(str(s) for s in cycle)
        raise UnsupportedOpError(
            f"{where}: subgraphs call each other in a cycle ({path}); LiteRT cannot run "
            "recursive control flow (preparing it overflows the stack)"
        )


def _find_cycle(calls: Sequence[Sequence[int]]) -> list[int] | None:
    """A cycle of the call graph as a path of subgraphs, or None (iterative DFS)."""
    state = [0] * len(calls)  # 0 new, 1 on the stack, 2 done
    for root in range(len(calls)):
        if state[root]:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        path = [root]
        state[root] = 1
        while stack:
            node, k = stack.pop()
            if k < len(calls[node]):
                stack.append((node, k + 1))
                nxt = calls[node][k]
                if state[nxt] == 1:
                    return [*path[path.index(nxt) :], nxt]
                if state[nxt] == 0:
                    state[nxt] = 1
                    path.append(nxt)
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                path.pop()
    return None


# ---------------------------------------------------------------------- FlexBuffers

_NULL, _INT, _UINT, _FLOAT, _KEY, _STRING = 0, 1, 2, 3, 4, 5
_INDIRECT = frozenset({6, 7, 8})  # INDIRECT_INT, INDIRECT_UINT, INDIRECT_FLOAT
_MAP, _VECTOR_KEY, _BOOL = 9, 14, 26
_SCALARS = frozenset({_NULL, _INT, _UINT, _FLOAT, _BOOL, *_INDIRECT})
_MAX_KEYS = 4096


class _Bad(Exception):
    pass


def _uint(buf: bytes, pos: int, width: int) -> int:
    if width not in (1, 2, 4, 8) or pos < 0 or pos + width > len(buf):
        raise _Bad(f"a {width}-byte field at byte {pos} is outside the {len(buf)}-byte buffer")
    return int.from_bytes(buf[pos : pos + width], "little")


def check_custom_options(op: str, options: bytes | None) -> str | None:
    """What is wrong with ``options`` for LiteRT's ``op`` kernel, or None if it is safe.

    The options must be a FlexBuffer map whose every offset, key string and scalar value lies
    inside the buffer, whose keys are sorted (the kernel looks them up by binary search), whose
    values are scalars, and which holds every key in :data:`FLEX_OPTION_KEYS`.
    """
    if options is None:
        return "it has no custom_options"
    try:
        keys = _flex_map_keys(bytes(options))
    except _Bad as err:
        return f"custom_options is not a well-formed FlexBuffer map ({err})"
    missing = [k for k in FLEX_OPTION_KEYS[op] if k not in keys]
    if missing:
        reads = ", ".join(FLEX_OPTION_KEYS[op])
        return f"custom_options lacks {missing[0]!r} (the kernel reads {reads})"
    return None


def custom_option_values(op: str, options: bytes | None) -> dict[str, int | float] | None:
    """The numbers in the options of a custom op LiteRT's builtin resolver ships (the keys of
    :data:`FLEX_OPTION_KEYS`; booleans as 0/1), or None when :func:`check_custom_options`
    finds them unsafe or ``op`` is not such an op."""
    if op not in FLEX_OPTION_KEYS or check_custom_options(op, options) is not None:
        return None
    try:
        doc = flexbuffers.Loads(bytes(options or b""))
    except (ValueError, TypeError, IndexError, KeyError, struct.error):  # pragma: no cover
        return None  # checked above: a well-formed map of scalars
    if not isinstance(doc, dict):  # pragma: no cover - checked above
        return None
    out: dict[str, int | float] = {}
    for k in FLEX_OPTION_KEYS[op]:
        v = doc.get(k)
        if isinstance(v, bool):
            out[k] = int(v)
        elif isinstance(v, (int, float)):
            out[k] = v
    return out


def _flex_map_keys(buf: bytes) -> set[str]:
    """The keys of a FlexBuffer map, after checking everything a reader of it would touch."""
    n = len(buf)
    if n < 3:
        raise _Bad(f"{n} bytes")
    root_width = buf[-1]
    packed = buf[-2]
    root = n - 2 - root_width
    if root_width not in (1, 2, 4, 8) or root < 0:
        raise _Bad(f"root width {root_width}")
    if packed >> 2 != _MAP:
        raise _Bad(f"the root is of type {packed >> 2}, not a map")
    width = 1 << (packed & 3)
    m = root - _uint(buf, root, root_width)
    size = _uint(buf, m - width, width)
    if size > _MAX_KEYS or m + size * width + size > n:
        raise _Bad(f"a map of {size} entries does not fit")
    keys_at = m - 3 * width
    keys = keys_at - _uint(buf, keys_at, width)
    key_width = _uint(buf, m - 2 * width, width)
    if key_width not in (1, 2, 4, 8):
        raise _Bad(f"key width {key_width}")
    if _uint(buf, keys - key_width, key_width) != size or keys + size * key_width > n:
        raise _Bad("the keys vector does not match the map")
    names: list[bytes] = []
    for i in range(size):
        at = keys + i * key_width
        start = at - _uint(buf, at, key_width)
        end = buf.find(b"\x00", max(start, 0))
        if start < 0 or end < 0:
            raise _Bad(f"key {i} is not a NUL-terminated string inside the buffer")
        names.append(buf[start:end])
        vtype, vwidth = buf[m + size * width + i] >> 2, 1 << (buf[m + size * width + i] & 3)
        if vtype not in _SCALARS:
            raise _Bad(f"the value of key {buf[start:end][:40]!r} is not a scalar (type {vtype})")
        if vtype in _INDIRECT:
            vat = m + i * width
            target = vat - _uint(buf, vat, width)
            _uint(buf, target, vwidth)
    if any(a >= b for a, b in itertools.pairwise(names)):
        raise _Bad("the keys are not sorted")
    return {k.decode("utf-8", "replace") for k in names}
