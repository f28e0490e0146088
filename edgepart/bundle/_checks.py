"""Cross-reference checks of plans and arena plans beyond what their JSON Schemas express."""

from __future__ import annotations

from typing import TYPE_CHECKING

from edgepart.bundle.plan_graph import PlanGraph, tensor_nbytes
from edgepart.errors import BundleError

if TYPE_CHECKING:
    from edgepart.bundle.format import Arena, ModelTensor, Plan, TensorRef

__all__ = ["check_arena", "check_plan"]


def check_plan(plan: Plan, where: str) -> None:
    """Raise :class:`BundleError` for the first inconsistency of a schema-valid plan."""
    ids = [p.id for p in plan.partitions]
    files = [p.file for p in plan.partitions]
    for seq, what in ((ids, "id"), (files, "file")):
        dup = next((x for x in seq if seq.count(x) > 1), None)
        if dup is not None:
            raise BundleError(f"{where}: two partitions have the {what} {dup!r}")
    _check_ops(plan, where)
    model_in = {t.tensor: t for t in plan.inputs}
    model_out = {t.tensor: t for t in plan.outputs}
    if len(model_in) != len(plan.inputs) or len(model_out) != len(plan.outputs):
        raise BundleError(f"{where}: a tensor is listed twice among the model inputs or outputs")
    made: dict[int, tuple[int, TensorRef]] = {}
    for k, p in enumerate(plan.partitions):
        here = f"{where}: partition {p.id!r}"
        for side in (p.inputs, p.outputs):
            locals_ = [t.index for t in side]
            if len(set(locals_)) != len(locals_):
                raise BundleError(f"{here}: two boundary tensors share a partition-file index")
        deps = set()
        for t in p.inputs:
            if t.tensor in model_in:
                _same_type(t, model_in[t.tensor], f"{here} input", where)
                continue
            if t.tensor not in made:
                raise BundleError(
                    f"{here} reads tensor {t.tensor} {t.tensor_name!r}, which is neither a model "
                    "input nor written by an earlier partition; list partitions in dependency "
                    "order"
                )
            j, ref = made[t.tensor]
            _same_type(t, ref, f"{here} input", where)
            deps.add(plan.partitions[j].id)
        want = [q for q in ids[:k] if q in deps]
        if list(p.depends_on) != want:
            raise BundleError(
                f"{here}: depends_on is {list(p.depends_on)} but its inputs come from {want}"
            )
        for t in p.outputs:
            if t.tensor in made or t.tensor in model_in:
                raise BundleError(f"{here} writes tensor {t.tensor}, which is already written")
            made[t.tensor] = (k, t)
            if t.tensor in model_out:
                _same_type(t, model_out[t.tensor], f"{here} output", where)
    for mt in plan.outputs:
        if mt.tensor not in made and mt.tensor not in model_in:
            raise BundleError(
                f"{where}: model output {mt.name!r} (tensor {mt.tensor}) is written by no partition"
            )


def _check_ops(plan: Plan, where: str) -> None:
    owner: dict[int, str] = {}
    for p in plan.partitions:
        if list(p.ops) != sorted(p.ops):
            raise BundleError(f"{where}: partition {p.id!r}: ops must be listed ascending")
        for op in p.ops:
            if op >= plan.num_ops:
                raise BundleError(
                    f"{where}: partition {p.id!r} lists op {op}, but the source subgraph has "
                    f"{plan.num_ops} ops"
                )
            if op in owner:
                raise BundleError(f"{where}: op {op} is in partitions {owner[op]!r} and {p.id!r}")
            owner[op] = p.id
    if len(owner) != plan.num_ops:
        missing = next(i for i in range(plan.num_ops) if i not in owner)
        raise BundleError(f"{where}: op {missing} is in no partition; every op must be placed")


def _same_type(a: TensorRef, b: TensorRef | ModelTensor, what: str, where: str) -> None:
    if a.dtype != b.dtype or a.shape != b.shape:
        raise BundleError(
            f"{what} tensor {a.tensor}: {a.dtype}{list(a.shape)} here but {b.dtype}"
            f"{list(b.shape)} where it is produced or declared ({where})"
        )


def check_arena(arena: Arena, plan: Plan, where: str) -> None:
    """Every buffer fits its memory; every staged tensor has a large enough boundary buffer;
    boundary buffers that may be live at the same time do not overlap."""
    for b in arena.buffers:
        mem = arena.memories.get(b.memory)
        if mem is None:
            raise BundleError(
                f"{where}: buffer of tensor {b.tensor} is in memory {b.memory!r}, which is not "
                f"among the memories {sorted(arena.memories)}"
            )
        if b.offset + b.size > mem["size"]:
            raise BundleError(
                f"{where}: buffer of tensor {b.tensor} ends at byte {b.offset + b.size}, beyond "
                f"memory {b.memory!r} of {mem['size']} bytes"
            )
    for name, mem in arena.memories.items():
        if mem["lower_bound"] > mem["size"]:
            raise BundleError(f"{where}: memory {name!r} is smaller than its own lower bound")
    graph = PlanGraph.from_plan(plan)
    sizes = _tensor_sizes(plan)
    boundary = arena.boundary()
    staged = graph.staged_tensors()
    for t in staged:
        found = boundary.get(t)
        if found is None:
            raise BundleError(
                f"{where}: no boundary buffer for tensor {t}, which passes between partitions; "
                "re-plan the arena for this plan"
            )
        if found.size < sizes[t]:
            raise BundleError(
                f"{where}: boundary buffer of tensor {t} has {found.size} bytes, the tensor needs "
                f"{sizes[t]}"
            )
    by_offset = sorted((boundary[t] for t in staged), key=lambda b: (b.memory, b.offset))
    for i, a in enumerate(by_offset):
        for b in by_offset[i + 1 :]:
            if b.memory != a.memory or b.offset >= a.offset + a.size:
                break
            if graph.conflict(a.tensor, b.tensor):
                raise BundleError(
                    f"{where}: buffers of tensors {a.tensor} and {b.tensor} overlap in memory "
                    f"{a.memory!r} (bytes {b.offset}..{min(a.offset + a.size, b.offset + b.size)})"
                    " but may be live at the same time; re-plan the arena for this plan"
                )


def _tensor_sizes(plan: Plan) -> dict[int, int]:
    sizes = {t.tensor: tensor_nbytes(t.dtype, t.shape) for t in plan.inputs}
    for p in plan.partitions:
        for t in (*p.inputs, *p.outputs):
            sizes[t.tensor] = tensor_nbytes(t.dtype, t.shape)
    return sizes
