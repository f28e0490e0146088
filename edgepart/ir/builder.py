"""Build IR models in code: for hand-made probe models, tests, and graph transformations.

Builders are permissive (like ``onnx.helper``): they assemble what they are given and leave
checking to :func:`edgepart.ir.verify.verify_model`.

>>> import numpy as np
>>> from edgepart.ir.builder import ModelBuilder
>>> from edgepart.ir.dtypes import DType
>>> mb = ModelBuilder()
>>> g = mb.subgraph("main")
>>> x = g.input("x", DType.FLOAT32, (1, 4))
>>> c = g.constant("c", np.ones((1, 4), np.float32))
>>> y = g.tensor("y", DType.FLOAT32, (1, 4))
>>> _ = g.op("ADD", [x, c], [y])
>>> g.output(y)
>>> model = mb.build()
>>> model.main.num_ops, model.main.op(0).name, model.main.op(0).options["fused_activation_function"]
(1, 'ADD', 'NONE')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgepart.ir.dtypes import DType
from edgepart.ir.graph import BufferTable, Model, Subgraph
from edgepart.ir.values import Csr, Metadata, OpCode, Options, Quantization, SignatureDef, Sparsity
from edgepart.schema import opnames
from edgepart.schema.opnames import options_type_for
from edgepart.schema.tables import ENUMS, TABLES

__all__ = ["ModelBuilder", "SubgraphBuilder", "default_options", "options_type_for"]


def default_options(options_type: str, **values: Any) -> Options:
    """An options table with every field at its schema default, overridden by ``values``.

    Raises ``KeyError`` naming the valid fields if a value names a field the table lacks.
    """
    fields = {f[0]: f for f in TABLES[options_type] if f[2] != "utype"}
    for k in values:
        if k not in fields:
            raise KeyError(f"{options_type} has no field {k!r}; fields: {sorted(fields)}")
    out: dict[str, Any] = {}
    for name, _, ftype, default, enum in TABLES[options_type]:
        if ftype == "utype":
            continue
        if name in values:
            out[name] = values[name]
        elif enum is not None:
            code = int(default) if isinstance(default, (int, float)) else 0
            out[name] = ENUMS[enum].get(code, default)
        else:
            out[name] = default
    return Options(options_type, out)


@dataclass
class _TensorRow:
    name: str
    dtype: int
    shape: tuple[int, ...]
    signature: tuple[int, ...] | None
    buffer: int
    quantization: Quantization | None
    is_variable: bool
    sparsity: Sparsity | None
    has_rank: bool
    extra: dict[str, Any]


@dataclass
class _OpRow:
    opcode: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    intermediates: tuple[int, ...]
    options: Options | None
    options2: Options | None
    custom_options: bytes | None
    extra: dict[str, Any]


class SubgraphBuilder:
    """Accumulates tensors and ops of one subgraph; see :class:`ModelBuilder`."""

    def __init__(self, model: ModelBuilder, name: str | None) -> None:
        self._model = model
        self.name = name
        self.tensors: list[_TensorRow] = []
        self.ops: list[_OpRow] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    # ------------------------------------------------------------------ tensors
    def tensor(
        self,
        name: str,
        dtype: DType | int,
        shape: Sequence[int],
        *,
        shape_signature: Sequence[int] | None = None,
        buffer: int = 0,
        quantization: Quantization | None = None,
        is_variable: bool = False,
        sparsity: Sparsity | None = None,
        has_rank: bool = True,
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """Add a tensor and return its index."""
        self.tensors.append(
            _TensorRow(
                name,
                int(dtype),
                tuple(int(d) for d in shape),
                None if shape_signature is None else tuple(int(d) for d in shape_signature),
                buffer,
                quantization,
                is_variable,
                sparsity,
                has_rank,
                dict(extra or {}),
            )
        )
        return len(self.tensors) - 1

    def input(self, name: str, dtype: DType | int, shape: Sequence[int], **kw: Any) -> int:
        """Add a tensor and mark it as a subgraph input."""
        t = self.tensor(name, dtype, shape, **kw)
        self.inputs.append(t)
        return t

    def output(self, *tensors: int) -> None:
        """Mark tensors as subgraph outputs (in call order)."""
        self.outputs.extend(tensors)

    def constant(
        self,
        name: str,
        value: np.ndarray,
        *,
        dtype: DType | int | None = None,
        quantization: Quantization | None = None,
        sparsity: Sparsity | None = None,
        shape: Sequence[int] | None = None,
    ) -> int:
        """Add a constant tensor holding ``value`` (stored little-endian)."""
        value = np.asarray(value)
        dt = DType.from_numpy(value.dtype) if dtype is None else DType(dtype)
        little = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
        buf = self._model.add_buffer(little)
        return self.tensor(
            name,
            dt,
            value.shape if shape is None else shape,
            buffer=buf,
            quantization=quantization,
            sparsity=sparsity,
        )

    # ------------------------------------------------------------------ ops
    def op(
        self,
        op: str,
        inputs: Sequence[int],
        outputs: Sequence[int],
        *,
        options: Options | Mapping[str, Any] | None = None,
        version: int = 1,
        custom_options: bytes | None = None,
        intermediates: Sequence[int] = (),
        options2: Options | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """Add an op by name (``"CONV_2D"``, or a custom code for custom ops); returns its index.

        ``options`` may be a plain mapping: it is completed with the schema defaults of the
        op's options table. Unknown names that are not builtins become custom ops.
        """
        if op in opnames.BUILTIN_CODES and op != "CUSTOM":
            opcode = OpCode(opnames.builtin_code(op), None, version)
            if options is not None and not isinstance(options, Options):
                otype = options_type_for(op)
                if otype is None:
                    raise KeyError(f"{op} carries no builtin options")
                options = default_options(otype, **dict(options))
            elif options is None:
                otype = options_type_for(op)
                options = default_options(otype) if otype else None
        else:
            opcode = OpCode(opnames.CUSTOM, op, version)
            if options is not None and not isinstance(options, Options):
                raise TypeError("custom ops take custom_options bytes, not builtin options")
        if isinstance(options, Options) and opnames.is_options2(options.type):
            options, options2 = None, options
        self.ops.append(
            _OpRow(
                self._model.opcode_index(opcode),
                tuple(inputs),
                tuple(outputs),
                tuple(intermediates),
                options,
                options2,
                custom_options,
                dict(extra or {}),
            )
        )
        return len(self.ops) - 1

    # ------------------------------------------------------------------ build
    def build(self, opcodes: tuple[OpCode, ...], buffers: BufferTable) -> Subgraph:
        t = self.tensors
        o = self.ops
        return Subgraph(
            name=self.name,
            inputs=np.asarray(self.inputs, dtype=np.int32),
            outputs=np.asarray(self.outputs, dtype=np.int32),
            op_opcode=np.asarray([r.opcode for r in o], dtype=np.int32),
            op_inputs=Csr.from_rows([r.inputs for r in o]),
            op_outputs=Csr.from_rows([r.outputs for r in o]),
            op_intermediates=Csr.from_rows([r.intermediates for r in o]),
            op_options=tuple(r.options for r in o),
            op_options2=tuple(r.options2 for r in o),
            op_custom_options=tuple(r.custom_options for r in o),
            op_extra=tuple(r.extra for r in o),
            tensor_dtype=np.asarray([r.dtype for r in t], dtype=np.int8),
            tensor_buffer=np.asarray([r.buffer for r in t], dtype=np.int64),
            tensor_shape=Csr.from_rows([r.shape for r in t]),
            tensor_signature=Csr.from_rows([r.signature or () for r in t]),
            tensor_has_signature=np.asarray([r.signature is not None for r in t], dtype=bool),
            tensor_is_variable=np.asarray([r.is_variable for r in t], dtype=bool),
            tensor_has_rank=np.asarray([r.has_rank for r in t], dtype=bool),
            tensor_names=tuple(r.name for r in t),
            tensor_quantization=tuple(r.quantization for r in t),
            tensor_sparsity=tuple(r.sparsity for r in t),
            tensor_extra=tuple(r.extra for r in t),
            opcodes=opcodes,
            buffers=buffers,
        )


@dataclass
class ModelBuilder:
    """Builds a :class:`~edgepart.ir.graph.Model` from subgraph builders.

    Buffer 0 is the empty sentinel TFLite requires; constants get their own buffers.
    """

    description: str | None = "edgepart"
    subgraphs: list[SubgraphBuilder] = field(default_factory=list)
    opcodes: list[OpCode] = field(default_factory=list)
    blobs: list[bytes | np.ndarray | None] = field(default_factory=lambda: [None])
    metadata: list[Metadata] = field(default_factory=list)
    signatures: list[SignatureDef] = field(default_factory=list)

    def subgraph(self, name: str | None = None) -> SubgraphBuilder:
        sb = SubgraphBuilder(self, name)
        self.subgraphs.append(sb)
        return sb

    def add_buffer(self, data: bytes | np.ndarray | None) -> int:
        self.blobs.append(data)
        return len(self.blobs) - 1

    def opcode_index(self, code: OpCode) -> int:
        if code not in self.opcodes:
            self.opcodes.append(code)
        return self.opcodes.index(code)

    def add_metadata(self, name: str, data: bytes) -> None:
        self.metadata.append(Metadata(name, self.add_buffer(data)))

    def add_signature(
        self,
        key: str,
        subgraph: int,
        inputs: Sequence[tuple[str, int]],
        outputs: Sequence[tuple[str, int]],
    ) -> None:
        self.signatures.append(SignatureDef(key, subgraph, tuple(inputs), tuple(outputs)))

    def build(self) -> Model:
        buffers = BufferTable.from_blobs(self.blobs)
        opcodes = tuple(self.opcodes)
        return Model(
            subgraphs=tuple(sb.build(opcodes, buffers) for sb in self.subgraphs),
            opcodes=opcodes,
            buffers=buffers,
            metadata=tuple(self.metadata),
            signature_defs=tuple(self.signatures),
            description=self.description,
        )
