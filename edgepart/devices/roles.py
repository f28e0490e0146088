"""Tensor roles of op operands: ``activations``, ``weights`` or ``indices``.

A delegate file states allowed dtypes per role. An operand's role comes from the op's known
operand layout below (e.g. GATHER's input 1 is ``indices``, CONV_2D's input 1 is ``weights``);
operands not listed are ``weights`` if constant and ``activations`` otherwise.

>>> input_role("GATHER", 1, is_constant=False), input_role("ADD", 1, is_constant=True)
('indices', 'weights')
"""

from __future__ import annotations

__all__ = ["ROLES", "input_role", "output_role"]

ROLES = ("activations", "weights", "indices")

A, W, IX = "activations", "weights", "indices"

# Operand roles by position for ops whose operands are not all activations.
_INPUTS: dict[str, tuple[str, ...]] = {
    "CONV_2D": (A, W, W),
    "DEPTHWISE_CONV_2D": (A, W, W),
    "CONV_3D": (A, W, W),
    "FULLY_CONNECTED": (A, W, W),
    "TRANSPOSE_CONV": (IX, W, A, W),
    "CONV_3D_TRANSPOSE": (IX, W, A, W),
    "PRELU": (A, W),
    "GATHER": (A, IX),
    "GATHER_ND": (A, IX),
    "EMBEDDING_LOOKUP": (IX, W),
    "RESHAPE": (A, IX),
    "EXPAND_DIMS": (A, IX),
    "SQUEEZE": (A,),
    "TRANSPOSE": (A, IX),
    "PAD": (A, IX),
    "PADV2": (A, IX, A),
    "MIRROR_PAD": (A, IX),
    "MEAN": (A, IX),
    "SUM": (A, IX),
    "REDUCE_MAX": (A, IX),
    "REDUCE_MIN": (A, IX),
    "REDUCE_PROD": (A, IX),
    "REDUCE_ANY": (A, IX),
    "REDUCE_ALL": (A, IX),
    "ARG_MAX": (A, IX),
    "ARG_MIN": (A, IX),
    "CUMSUM": (A, IX),
    "SLICE": (A, IX, IX),
    "STRIDED_SLICE": (A, IX, IX, IX),
    "SPLIT": (IX, A),
    "SPLIT_V": (A, IX, IX),
    "TILE": (A, IX),
    "BROADCAST_TO": (A, IX),
    "RESIZE_BILINEAR": (A, IX),
    "RESIZE_NEAREST_NEIGHBOR": (A, IX),
    "SPACE_TO_BATCH_ND": (A, IX, IX),
    "BATCH_TO_SPACE_ND": (A, IX, IX),
    "ONE_HOT": (IX, IX, A, A),
    "TOPK_V2": (A, IX),
    "SCATTER_ND": (IX, A, IX),
    "FILL": (IX, A),
    "RANGE": (IX, IX, IX),
    "REVERSE_V2": (A, IX),
    "SEGMENT_SUM": (A, IX),
    "UNSORTED_SEGMENT_SUM": (A, IX, IX),
    "DYNAMIC_UPDATE_SLICE": (A, A, IX),
}

_OUTPUTS: dict[str, tuple[str, ...]] = {
    "ARG_MAX": (IX,),
    "ARG_MIN": (IX,),
    "SHAPE": (IX,),
    "TOPK_V2": (A, IX),
    "UNIQUE": (A, IX),
    "WHERE": (IX,),
    "NON_MAX_SUPPRESSION_V4": (IX, IX),
    "NON_MAX_SUPPRESSION_V5": (IX, A, IX),
}


def input_role(op_name: str, k: int, *, is_constant: bool) -> str:
    """The role of input ``k`` of an op named ``op_name``."""
    roles = _INPUTS.get(op_name)
    if roles is not None and k < len(roles):
        return roles[k]
    return W if is_constant else A


def output_role(op_name: str, k: int) -> str:
    """The role of output ``k`` of an op named ``op_name``."""
    roles = _OUTPUTS.get(op_name)
    if roles is not None and k < len(roles):
        return roles[k]
    return A
