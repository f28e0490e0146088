"""Streaming: successive inputs overlap across pipeline stages.

Every partition is a stage with its own thread; stages talk through FIFO queues along the
plan's dependency edges, so each stage sees inputs in order and a stage with several
predecessors takes one message from each. An input in flight owns a *slot*: one set of staging
buffers for every tensor passed between partitions (laid out by the bundle's arena plan when
it has one, see :mod:`edgepart.runtime.staging`). A stage copies its inputs from the slot,
invokes (holding its unit's lock, so partitions of one unit never overlap), and copies its
outputs into the slot; model outputs are copied out once into the result arrays. At most
``depth`` inputs are in flight (slots are reused), which bounds every queue and the memory.

Errors are attached to the input's slot; the stages of that input after the failure are
skipped, and the caller gets the error when that input's turn to be yielded comes, after the
pipeline has been stopped and joined.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from edgepart.runtime.details import PartitionInvokeError, TensorValueError, check_value
from edgepart.runtime.staging import Slot, make_slots

if TYPE_CHECKING:
    from edgepart.runtime.interpreter import PartitionedInterpreter

__all__ = ["Pipeline"]

_STOP = object()


class Pipeline:
    """One ``run_stream`` call over an allocated :class:`PartitionedInterpreter`."""

    def __init__(self, interp: PartitionedInterpreter, depth: int | None) -> None:
        plan, routes = interp._plan, interp._routes
        graph = routes.graph
        n = len(plan.partitions)
        self.interp = interp
        self.depth = depth if depth is not None else max(2, 2 * n)
        if self.depth < 1:
            raise TensorValueError(f"depth must be >= 1, got {depth}")
        staged = set(graph.staged_tensors())
        outs = {t.tensor for t in plan.outputs}
        self.stage_in = [tuple((t.index, t.tensor) for t in p.inputs) for p in plan.partitions]
        self.stage_out = [
            tuple((t.index, t.tensor) for t in p.outputs if t.tensor in staged)
            for p in plan.partitions
        ]
        self.stage_res = [
            tuple((t.index, t.tensor) for t in p.outputs if t.tensor in outs)
            for p in plan.partitions
        ]
        succs: list[list[int]] = [[] for _ in range(n)]
        for k, deps in enumerate(graph.deps):
            for d in deps:
                succs[d].append(k)
        self.edges: dict[tuple[int, int], queue.SimpleQueue[Any]] = {
            (d, k): queue.SimpleQueue() for k in range(n) for d in graph.deps[k]
        }
        self.feed: dict[int, queue.SimpleQueue[Any]] = {
            k: queue.SimpleQueue() for k in range(n) if not graph.deps[k]
        }
        self.done: dict[int, queue.SimpleQueue[Any]] = {
            k: queue.SimpleQueue() for k in range(n) if not succs[k]
        }
        self.inq = [[self.edges[d, k] for d in graph.deps[k]] or [self.feed[k]] for k in range(n)]
        self.outq = [[self.edges[k, s] for s in succs[k]] or [self.done[k]] for k in range(n)]
        locks = {u: threading.Lock() for u in routes.units}
        self.locks = [locks[u] for u in routes.units]
        self.in_details = interp.get_input_details()
        self.names = [t.name for t in plan.inputs]
        self.out_tensors = [t.tensor for t in plan.outputs]
        self.out_names = [t.name for t in plan.outputs]
        self.passthrough = [t for t in self.out_tensors if t in graph.model_inputs]
        self.slots = make_slots(plan, interp.bundle.arena, sorted(staged), self.depth)

    def run(self, inputs: Iterable[Sequence[Any] | Mapping[str, Any]]) -> Iterator[Any]:
        threads = [
            threading.Thread(target=self._stage, args=(k,), daemon=True, name=f"edgepart-stage-{k}")
            for k in range(len(self.inq))
        ]
        for th in threads:
            th.start()
        free = list(reversed(self.slots))
        pending: deque[tuple[Slot, bool]] = deque()
        source = iter(inputs)
        exhausted = False
        try:
            while True:
                while not exhausted and free:
                    item = next(source, None)
                    if item is None:
                        exhausted = True
                        break
                    slot = free.pop()
                    as_dict = self._fill(slot, item)
                    for q in self.feed.values():
                        q.put(slot)
                    pending.append((slot, as_dict))
                if not pending:
                    return
                slot, as_dict = pending.popleft()
                for q in self.done.values():
                    q.get()
                if slot.error is not None:
                    raise slot.error
                res = [slot.results[t] for t in self.out_tensors]
                free.append(slot)
                yield dict(zip(self.out_names, res, strict=True)) if as_dict else res
        finally:
            for q in self.feed.values():
                q.put(_STOP)
            for th in threads:
                th.join()

    def _fill(self, slot: Slot, item: Sequence[Any] | Mapping[str, Any]) -> bool:
        """Copy one input item into the slot; True if it was given (and is answered) by name."""
        as_dict = isinstance(item, Mapping)
        if as_dict:
            assert isinstance(item, Mapping)
            unknown = sorted(set(item) - set(self.names))
            if unknown or len(item) != len(self.names):
                raise TensorValueError(
                    f"stream item names {sorted(item)} do not match the inputs {self.names}"
                )
            values = [item[n] for n in self.names]
        else:
            values = list(item)
            if len(values) != len(self.names):
                raise TensorValueError(
                    f"stream item has {len(values)} values; the model has {len(self.names)} inputs"
                )
        slot.error = None
        slot.results = {}
        for detail, v in zip(self.in_details, values, strict=True):
            arr = check_value(v, detail)
            t = detail["index"]
            buf = slot.buffers.get(t)
            if buf is not None:
                np.copyto(buf, arr)
            if t in self.passthrough:
                slot.results[t] = arr.copy()
        return as_dict

    def _stage(self, k: int) -> None:
        # Hot loop: one pass per input. Names are bound once because per-item Python work
        # here sits on the pipeline's critical path (the GIL is only free inside invoke).
        it = self.interp._parts[k]
        set_tensor, invoke, view = it.set_tensor, it.invoke, it.tensor
        lock = self.locks[k]
        entry = self.interp.plan.partitions[k]
        inq, outq = self.inq[k], self.outq[k]
        first, rest = inq[0].get, [q.get for q in inq[1:]]
        stage_in, stage_out, stage_res = self.stage_in[k], self.stage_out[k], self.stage_res[k]
        copyto = np.copyto
        while True:
            msg = first()
            for get in rest:  # one message from every predecessor, all for the same input
                get()
            if msg is _STOP:
                for q in outq:
                    q.put(_STOP)
                return
            slot: Slot = msg
            if slot.error is None:
                try:
                    buffers = slot.buffers
                    for local, t in stage_in:
                        set_tensor(local, buffers[t])
                    with lock:
                        invoke()
                    for local, t in stage_out:
                        copyto(buffers[t], view(local)())
                    for local, t in stage_res:
                        slot.results[t] = it.get_tensor(local)
                except Exception as err:  # handed to the caller in input order
                    msg_ = " ".join(str(err).split())
                    slot.error = PartitionInvokeError(
                        f"partition {entry.id} ({entry.unit_name}) failed while streaming: {msg_}"
                    )
            for q in outq:
                q.put(slot)
