""":class:`PartitionedInterpreter`: a bundle run as chained LiteRT interpreters, with LiteRT's API.

Swap it in for ``ai_edge_litert.interpreter.Interpreter`` by passing a bundle directory where a
model path was: ``allocate_tensors``, ``get_input_details`` / ``get_output_details`` (LiteRT's
keys; ``index`` is the source model's tensor index), ``set_tensor``, ``get_tensor``,
``tensor``, ``invoke``, ``get_signature_list``, ``get_signature_runner`` and
``reset_all_variables`` behave as LiteRT's do. Extras: :meth:`run_stream` (pipelined inputs)
and :attr:`executors` (where each partition really ran).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from edgepart.bundle.format import Bundle, Plan
from edgepart.devices.host_executors import HOST_EXECUTORS, MAX_THREADS
from edgepart.errors import BundleError, UsageError
from edgepart.ir.input_ranges import integer_input_ranges
from edgepart.runtime import details as _details
from edgepart.runtime.dispatch import Concurrent, Serial
from edgepart.runtime.executors import (
    AUTO_FALLBACK,
    ExecutorChoice,
    check_host_can_run,
    choose_executor,
    open_partition,
    prepare_error,
)
from edgepart.runtime.loading import check_partition_io, resolve_bundle
from edgepart.runtime.routing import plan_routes
from edgepart.runtime.shards import ShardGroup, shard_groups
from edgepart.runtime.signature_runner import PartitionedSignatureRunner
from edgepart.runtime.stream import Pipeline
from edgepart.tflite.reader import read_model_bytes

__all__ = ["HostFallbackWarning", "PartitionedInterpreter"]

log = logging.getLogger(__name__)

# An OpResolverType other than LiteRT's default (AUTO) runs every partition on that kernel set.
_RESOLVER_OVERRIDE = {e.resolver: e.name for e in HOST_EXECUTORS.values() if e.resolver != "AUTO"}


class HostFallbackWarning(UserWarning):
    """Some partitions run on the host because their processor's delegate is absent."""


class PartitionedInterpreter:
    """Run a bundle's partitions, each in its own LiteRT interpreter, behind LiteRT's API.

    Parameters
    ----------
    model_path
        A bundle directory (or its ``manifest.json``).
    model_content
        Not supported (a bundle is several files); raises :class:`UsageError`.
    experimental_delegates
        Not supported: delegates are chosen per partition (``delegate_libraries``).
    num_threads
        CPU threads per partition interpreter (a partition's own ``threads`` wins); default 1.
    experimental_op_resolver_type
        LiteRT's ``OpResolverType``: ``BUILTIN_WITHOUT_DEFAULT_DELEGATES`` / ``BUILTIN_REF``
        run every partition on builtin / reference kernels; ``AUTO``/``BUILTIN``: the plan's.
    bundle, model, plan
        Alternatives to ``model_path``: a loaded :class:`Bundle`, or a model (``Model`` or
        ``.tflite`` path) plus a plan (a list of ``PartitionSpec`` / op lists, or a ``Plan``).
    executor
        Override every partition's executor with a host executor: ``"xnnpack"``,
        ``"builtin"`` or ``"reference"`` (:mod:`edgepart.devices.host_executors`).
    delegate_libraries
        Delegate name -> external delegate library path (or ``{"library", "options"}``).
    fallback
        Host executor for partitions whose delegate library is absent: ``"auto"`` (the one
        each delegate's file names, ``xnnpack`` for the shipped ones), ``"xnnpack"``,
        ``"builtin"`` or ``"reference"``; ``None`` makes a missing library an error.
    parallel
        Run partitions on different units concurrently when the plan allows it.

    Raises
    ------
    BundleError
        The bundle is missing, incomplete, corrupted, of an unknown version, or a partition
        file does not match the plan.
    RuntimeBackendError
        An explicitly requested delegate library cannot be loaded.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        model_content: bytes | None = None,
        experimental_delegates: Sequence[Any] | None = None,
        num_threads: int | None = None,
        experimental_op_resolver_type: Any = None,
        *,
        bundle: Bundle | None = None,
        model: Any = None,
        plan: Any = None,
        executor: str | None = None,
        delegate_libraries: Mapping[str, Any] | None = None,
        fallback: str | None = AUTO_FALLBACK,
        parallel: bool = True,
    ) -> None:
        if model_content is not None:
            raise UsageError("a partitioned interpreter runs a bundle directory, not model bytes")
        if experimental_delegates:
            raise UsageError(
                "experimental_delegates apply to one model; a bundle chooses a delegate per "
                "partition: pass delegate_libraries={'gpu': PATH, ...}"
            )
        if num_threads is not None and (
            not isinstance(num_threads, int) or not 1 <= num_threads <= MAX_THREADS
        ):
            raise UsageError(f"num_threads must be an int in 1..{MAX_THREADS}, got {num_threads!r}")
        resolver = getattr(experimental_op_resolver_type, "name", None)
        executor = executor or _RESOLVER_OVERRIDE.get(str(resolver))
        self._bundle = resolve_bundle(model_path, bundle, model, plan)
        self._plan: Plan = self._bundle.plan
        self._num_threads = num_threads or 1
        self._routes = plan_routes(self._plan)
        self._parts: list[Any] = []
        self._choices: list[ExecutorChoice] = []
        for entry in self._plan.partitions:
            choice = choose_executor(
                entry, override=executor, libraries=delegate_libraries, fallback=fallback
            )
            threads = entry.threads or self._num_threads
            if threads > MAX_THREADS:
                raise BundleError(
                    f"partition {entry.id}: threads {threads} is more than {MAX_THREADS}; edit "
                    "plan.json or re-create the bundle"
                )
            blob = self._bundle.partition_bytes[entry.id]
            if choice.kind != "delegate":
                check_host_can_run(entry, choice, blob)
            it, choice = open_partition(choice, blob, threads, fallback)
            check_partition_io(it, entry)
            self._parts.append(it)
            self._choices.append(choice)
        fell_back = [c for c in self._choices if c.fallback]
        if fell_back:
            msg = "; ".join(
                f"{c.partition} ({c.requested}) on {c.executed_on}" for c in fell_back[:4]
            )
            more = f" and {len(fell_back) - 4} more" if len(fell_back) > 4 else ""
            warnings.warn(
                f"{len(fell_back)} partition(s) run on the host, not their processor: {msg}{more}",
                HostFallbackWarning,
                stacklevel=2,
            )
        self._in_details = [self._detail(t.tensor, "input") for t in self._plan.inputs]
        self._out_details = [self._detail(t.tensor, "output") for t in self._plan.outputs]
        self._by_index = {d["index"]: d for d in self._in_details}
        self._parallel = parallel and self._routes.parallel
        self._scheduler: Serial | Concurrent | None = None
        self._steps: list[Any] = []
        self._streaming = False
        self._unused_inputs: dict[int, np.ndarray] = {}  # model inputs no partition reads
        self._ranges: dict[int, tuple[int, int]] | None = None

    # ------------------------------------------------------------------ LiteRT API
    def allocate_tensors(self) -> None:
        """Allocate every partition's tensors and bind the routing (idempotent)."""
        self._check_idle()
        for k, it in enumerate(self._parts):
            try:
                it.allocate_tensors()
            except (ValueError, RuntimeError) as err:
                p = self._plan.partitions[k]
                raise prepare_error(
                    f"partition {p.id} ({p.unit_name}, {self._choices[k].executed_on})", err
                ) from None
        if self._scheduler is None:
            self._steps = [
                tuple((local, self._parts[j].tensor(out)) for local, j, out in pulls)
                for pulls in self._routes.pulls
            ]
            self._scheduler = (
                Concurrent(self._run_part, self._routes)
                if self._parallel
                else Serial(self._run_all)
            )

    def get_input_details(self) -> list[dict[str, Any]]:
        """One dict per model input, in the source subgraph's input order (LiteRT's keys)."""
        return [dict(d) for d in self._in_details]

    def get_output_details(self) -> list[dict[str, Any]]:
        """One dict per model output, in the source subgraph's output order (LiteRT's keys)."""
        return [dict(d) for d in self._out_details]

    def set_tensor(self, tensor_index: int, value: Any) -> None:
        """Copy ``value`` into model input ``tensor_index`` (dtype and shape must match)."""
        detail = self._by_index.get(int(tensor_index))
        if detail is None:
            raise _details.TensorValueError(
                f"tensor {tensor_index} is not a model input; inputs: {sorted(self._by_index)}"
            )
        self._need_allocated("set_tensor")
        arr = _details.check_value(value, detail)
        targets = self._routes.input_targets[detail["index"]]
        for k, local in targets:
            self._parts[k].set_tensor(local, arr)
        if not targets:
            self._unused_inputs[detail["index"]] = arr.copy()

    def get_tensor(self, tensor_index: int, subgraph_index: int = 0) -> np.ndarray:
        """A copy of a model input/output or of a tensor passed between partitions."""
        self._need_allocated("get_tensor")
        t = int(tensor_index)
        home = self._routes.homes.get(t) if subgraph_index == 0 else None
        if home is None:
            raise _details.TensorValueError(
                f"tensor {t} is internal to a partition (or not in subgraph 0); only model "
                "inputs, outputs and tensors passed between partitions can be read"
            )
        k, local = home
        if k < 0:
            d = self._by_index[t]
            kept = self._unused_inputs.get(t)
            return np.zeros(d["shape"], d["dtype"]) if kept is None else kept.copy()
        out: np.ndarray = self._parts[k].get_tensor(local)
        return out

    def tensor(self, tensor_index: int) -> Any:
        """A function returning a NumPy view of the tensor's buffer (LiteRT's zero-copy access;
        do not hold the view across ``invoke``)."""
        k, local = self._routes.homes.get(int(tensor_index), (-1, -1))
        if k < 0:
            raise _details.TensorValueError(f"tensor {tensor_index} has no buffer to view")
        return self._parts[k].tensor(local)

    def invoke(self) -> None:
        """Run every partition in dependency order (concurrently across units if allowed)."""
        self._check_idle()
        self._need_allocated("invoke")
        assert self._scheduler is not None
        self._scheduler.run()

    def get_signature_list(self) -> dict[str, dict[str, list[str]]]:
        """``{key: {"inputs": [...], "outputs": [...]}}`` of the source signature (if any)."""
        key = self._plan.signature_key
        if key is None:
            return {}
        return {
            key: {
                "inputs": sorted(t.name for t in self._plan.inputs),
                "outputs": sorted(t.name for t in self._plan.outputs),
            }
        }

    def get_signature_runner(self, signature_key: str | None = None) -> Any:
        """A callable ``runner(**inputs) -> {output name: array}``, as LiteRT's."""
        keys = list(self.get_signature_list())
        if signature_key is None:
            if len(keys) != 1:
                raise ValueError(
                    f"SignatureDef signature_key is None and model has {len(keys)} Signatures. "
                    "None is only allowed when the model has 1 SignatureDef"
                )
            signature_key = keys[0]
        if signature_key not in keys:
            raise ValueError(f'Invalid signature_key provided: "{signature_key}".')
        return PartitionedSignatureRunner(self, self._plan)

    def resize_tensor_input(self, input_index: int, tensor_size: Any, strict: bool = False) -> None:
        """Accepted only when the size is unchanged (partition shapes are fixed)."""
        detail = self._by_index.get(int(input_index))
        want = None if detail is None else [int(x) for x in detail["shape"]]
        if want != [int(x) for x in tensor_size]:
            raise _details.TensorValueError(
                f"cannot resize input {input_index} to {list(tensor_size)}: partition shapes "
                f"are fixed when the bundle is written (shape {want}); partition the model "
                "again with --input-shape (input_shapes= in the API) for this size"
            )

    def reset_all_variables(self) -> None:
        for it in self._parts:
            it.reset_all_variables()

    def get_tensor_details(self, subgraph_index: int = 0) -> list[dict[str, Any]]:
        """Details of the model inputs and outputs (the tensors this interpreter exposes)."""
        seen = {d["index"]: d for d in (*self._in_details, *self._out_details)}
        return [dict(seen[k]) for k in sorted(seen)]

    def num_subgraphs(self) -> int:
        return 1

    @property
    def num_threads(self) -> int:
        """CPU threads each partition interpreter was created with (unless the plan says)."""
        return self._num_threads

    # ------------------------------------------------------------------ edgepart extras
    @property
    def bundle(self) -> Bundle:
        return self._bundle

    @property
    def plan(self) -> Plan:
        return self._plan

    @property
    def executors(self) -> list[ExecutorChoice]:
        """Per partition, the executor asked for and the one actually used (``executed_on``)."""
        return list(self._choices)

    @property
    def parallel(self) -> bool:
        """True if ``invoke`` runs partitions of different units concurrently."""
        return self._parallel

    @property
    def splits(self) -> list[ShardGroup]:
        """The plan's tensor-parallel splits: per layer, the partitions holding its shards and
        whether ``invoke`` runs them at the same time (``docs/tensor_parallel.md``)."""
        return shard_groups(self._plan, self._routes, self._parallel)

    def run_stream(
        self, inputs: Iterable[Sequence[Any] | Mapping[str, Any]], *, depth: int | None = None
    ) -> Iterator[Any]:
        """Pipeline successive inputs through the partitions (see :mod:`edgepart.runtime.stream`).

        Each item is a sequence in ``get_input_details()`` order or a mapping by signature
        input name; each result is a list in ``get_output_details()`` order or a dict by
        signature output name, in input order.
        """
        self._check_idle()
        self._need_allocated("run_stream")
        self._streaming = True
        try:
            yield from Pipeline(self, depth).run(inputs)
        finally:
            self._streaming = False

    def input_ranges(self) -> dict[int, tuple[int, int]]:
        """Model input tensor -> the ``(lo, hi)`` its values must stay in, for the inputs the
        partitions read as indices (a ``GATHER``'s token ids must index its table): what
        random inputs are drawn from."""
        if self._ranges is None:
            found: dict[int, tuple[int, int]] = {}
            by_part: dict[int, dict[int, tuple[int, int]]] = {}
            for t, targets in self._routes.input_targets.items():
                for k, local in targets:
                    if k not in by_part:
                        entry = self._plan.partitions[k]
                        piece = read_model_bytes(self._bundle.partition_bytes[entry.id])
                        by_part[k] = integer_input_ranges(piece.main)
                    r = by_part[k].get(local)
                    if r is not None:
                        lo, hi = found.get(t, r)
                        found[t] = (max(lo, r[0]), min(hi, r[1]))
            self._ranges = found
        return dict(self._ranges)

    def close(self) -> None:
        """Stop worker threads; the interpreter must not be used afterwards."""
        if self._scheduler is not None:
            self._scheduler.close()

    def __enter__(self) -> PartitionedInterpreter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    def _run_part(self, k: int) -> None:
        it = self._parts[k]
        try:
            for local, view in self._steps[k]:
                self._set(k, it, local, view())
            it.invoke()
        except (ValueError, RuntimeError) as err:
            raise self._invoke_error(k, err) from err

    def _run_all(self) -> None:
        """Every partition in plan order on this thread (the serial schedule's hot loop)."""
        k = 0
        try:
            for k, it in enumerate(self._parts):
                set_tensor = it.set_tensor
                for local, view in self._steps[k]:
                    value = view()
                    try:
                        set_tensor(local, value)
                    except ValueError:
                        self._set(k, it, local, value)
                it.invoke()
        except (ValueError, RuntimeError) as err:
            raise self._invoke_error(k, err) from err

    def _set(self, k: int, it: Any, local: int, value: np.ndarray) -> None:
        """``set_tensor``, resizing the partition first when a tensor computed at run time
        (a shape LiteRT learns only while running) arrives at another size than the file's."""
        try:
            it.set_tensor(local, value)
            return
        except ValueError:
            detail = next((d for d in it.get_input_details() if d["index"] == local), None)
            if detail is None or tuple(detail["shape"]) == value.shape:
                raise
        it.resize_tensor_input(local, list(value.shape))
        it.allocate_tensors()
        it.set_tensor(local, value)

    def _invoke_error(self, k: int, err: Exception) -> _details.PartitionInvokeError:
        p, c = self._plan.partitions[k], self._choices[k]
        msg = " ".join(str(err).split())
        return _details.PartitionInvokeError(
            f"partition {p.id} ({p.unit_name}, {c.executed_on}) failed: {msg}"
        )

    def _detail(self, t: int, side: str) -> dict[str, Any]:
        k, local = self._routes.homes[t]
        if k < 0:
            return _details.detail_from_plan(next(x for x in self._plan.inputs if x.tensor == t))
        entry = self._plan.partitions[k]
        part_side = "input" if any(x.tensor == t for x in entry.inputs) else "output"
        return _details.detail_from_partition(self._parts[k], local, t, part_side)

    def _need_allocated(self, what: str) -> None:
        if self._scheduler is None:
            raise UsageError(f"call allocate_tensors() before {what}()")

    def _check_idle(self) -> None:
        if self._streaming:
            raise UsageError("a run_stream() is in progress; finish or close it first")
