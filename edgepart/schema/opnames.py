"""Builtin operator codes and names, from the generated schema tables.

>>> builtin_name(3), builtin_code("CONV_2D")
('CONV_2D', 3)
"""

from __future__ import annotations

from edgepart.schema.tables import ENUMS, TABLES

__all__ = [
    "BUILTIN_CODES",
    "BUILTIN_NAMES",
    "CALLING_BUILTINS",
    "CUSTOM",
    "DELEGATE",
    "builtin_code",
    "builtin_name",
    "is_options2",
    "options_type_for",
]

BUILTIN_NAMES: dict[int, str] = dict(ENUMS["BuiltinOperator"])
BUILTIN_CODES: dict[str, int] = {name: code for code, name in BUILTIN_NAMES.items()}

CUSTOM = BUILTIN_CODES["CUSTOM"]
DELEGATE = BUILTIN_CODES["DELEGATE"]
# Codes above this are stored with deprecated_builtin_code = 127 in files.
PLACEHOLDER_FOR_GREATER_OP_CODES = 127


def builtin_name(code: int) -> str:
    """The schema name of a builtin code; ``BUILTIN_<code>`` for codes newer than the schema."""
    return BUILTIN_NAMES.get(code, f"BUILTIN_{code}")


def builtin_code(name: str) -> int:
    """The builtin code of a schema name such as ``"CONV_2D"``; raises ``KeyError`` if unknown."""
    return BUILTIN_CODES[name]


# Options table per builtin op where the name is not simply CamelCase(op) + "Options".
_OPTIONS_TYPE = {
    "CONV_2D": "Conv2DOptions",
    "CONV_3D": "Conv3DOptions",
    "CONV_3D_TRANSPOSE": "Conv3DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "L2_POOL_2D": "Pool2DOptions",
    "MEAN": "ReducerOptions",
    "SUM": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions",
    "REDUCE_MIN": "ReducerOptions",
    "REDUCE_PROD": "ReducerOptions",
    "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions",
    "CONCATENATION": "ConcatenationOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "L2_NORMALIZATION": "L2NormOptions",
    "LOCAL_RESPONSE_NORMALIZATION": "LocalResponseNormalizationOptions",
    "LSTM": "LSTMOptions",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
    "BIDIRECTIONAL_SEQUENCE_LSTM": "BidirectionalSequenceLSTMOptions",
    "RNN": "RNNOptions",
    "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions",
    "BIDIRECTIONAL_SEQUENCE_RNN": "BidirectionalSequenceRNNOptions",
    "SVDF": "SVDFOptions",
    "LSH_PROJECTION": "LSHProjectionOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "SPACE_TO_DEPTH": "SpaceToDepthOptions",
    "DEPTH_TO_SPACE": "DepthToSpaceOptions",
    "BATCH_MATMUL": "BatchMatMulOptions",
    "LEAKY_RELU": "LeakyReluOptions",
    "SQUARED_DIFFERENCE": "SquaredDifferenceOptions",
    "MIRROR_PAD": "MirrorPadOptions",
    "ARG_MAX": "ArgMaxOptions",
    "ARG_MIN": "ArgMinOptions",
    "CALL_ONCE": "CallOnceOptions",
    "VAR_HANDLE": "VarHandleOptions",
    "READ_VARIABLE": "ReadVariableOptions",
    "ASSIGN_VARIABLE": "AssignVariableOptions",
    "DEQUANTIZE": "DequantizeOptions",
    "QUANTIZE": "QuantizeOptions",
    "IF": "IfOptions",
    "WHILE": "WhileOptions",
    "CUMSUM": "CumsumOptions",
    "GELU": "GeluOptions",
    "STRIDED_SLICE": "StridedSliceOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
    "EMBEDDING_LOOKUP_SPARSE": "EmbeddingLookupSparseOptions",
    "SPLIT_V": "SplitVOptions",
    "ONE_HOT": "OneHotOptions",
    "BROADCAST_TO": "BroadcastToOptions",
    "MATRIX_DIAG": "MatrixDiagOptions",
    "MATRIX_SET_DIAG": "MatrixSetDiagOptions",
    "SELECT_V2": "SelectV2Options",
    "SEGMENT_SUM": "SegmentSumOptions",
    "DENSIFY": "DensifyOptions",
    "LOG_SOFTMAX": "LogSoftmaxOptions",
    "HARD_SWISH": "HardSwishOptions",
    "SCATTER_ND": "ScatterNdOptions",
    "GATHER_ND": "GatherNdOptions",
    "TOPK_V2": "TopKV2Options",
    "EXPAND_DIMS": "ExpandDimsOptions",
    "RANK": "RankOptions",
    "FLOOR_DIV": "FloorDivOptions",
    "FLOOR_MOD": "FloorModOptions",
    "LOGICAL_OR": "LogicalOrOptions",
    "LOGICAL_AND": "LogicalAndOptions",
    "LOGICAL_NOT": "LogicalNotOptions",
    "NOT_EQUAL": "NotEqualOptions",
    "GREATER_EQUAL": "GreaterEqualOptions",
    "LESS_EQUAL": "LessEqualOptions",
    "ADD_N": "AddNOptions",
    "ZEROS_LIKE": "ZerosLikeOptions",
    "REVERSE_V2": "ReverseV2Options",
    "REVERSE_SEQUENCE": "ReverseSequenceOptions",
    "UNSORTED_SEGMENT_SUM": "UnsortedSegmentSumOptions",
    "UNSORTED_SEGMENT_PROD": "UnsortedSegmentProdOptions",
    "UNSORTED_SEGMENT_MAX": "UnsortedSegmentMaxOptions",
    "UNSORTED_SEGMENT_MIN": "UnsortedSegmentMinOptions",
    "NON_MAX_SUPPRESSION_V4": "NonMaxSuppressionV4Options",
    "NON_MAX_SUPPRESSION_V5": "NonMaxSuppressionV5Options",
    "SPACE_TO_BATCH_ND": "SpaceToBatchNDOptions",
    "BATCH_TO_SPACE_ND": "BatchToSpaceNDOptions",
    "BITCAST": "BitcastOptions",
    "BITWISE_XOR": "BitwiseXorOptions",
    "RIGHT_SHIFT": "RightShiftOptions",
    "RANDOM_STANDARD_NORMAL": "RandomOptions",
    "RANDOM_UNIFORM": "RandomOptions",
    "MULTINOMIAL": "RandomOptions",
    "FAKE_QUANT": "FakeQuantOptions",
    "PADV2": "PadV2Options",
    "MAXIMUM": "MaximumMinimumOptions",
    "MINIMUM": "MaximumMinimumOptions",
    "ATAN2": "ATan2Options",
    "STABLEHLO_COMPOSITE": "StableHLOCompositeOptions",
}

_OPTIONS2 = frozenset(v for k, v in ENUMS["BuiltinOptions2"].items() if k)


def is_options2(options_type: str) -> bool:
    """True if the table belongs to the second options union (``builtin_options_2``)."""
    return options_type in _OPTIONS2


def options_type_for(op: str) -> str | None:
    """The builtin-options table an op carries, or ``None`` if it has none."""
    if op in _OPTIONS_TYPE:
        return _OPTIONS_TYPE[op]
    camel = "".join(part.capitalize() for part in op.split("_")) + "Options"
    return camel if camel in TABLES else None


def _calls_subgraphs(options_type: str | None) -> bool:
    return options_type is not None and any(
        f[0].endswith("subgraph_index") for f in TABLES.get(options_type, ())
    )


# Builtins whose options name other subgraphs (IF/WHILE bodies, CALL_ONCE init, composites).
CALLING_BUILTINS: frozenset[int] = frozenset(
    code for name, code in BUILTIN_CODES.items() if _calls_subgraphs(options_type_for(name))
)
