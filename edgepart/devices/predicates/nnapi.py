"""Predicates of the Android NNAPI delegate, found by the delegate's name.

Op availability by Android API level and NNAPI feature level is generic (``api_level_ge``,
``feature_level_ge`` in :mod:`edgepart.devices.predicates.common`); what is NNAPI's own lives here.
"""

from __future__ import annotations

from edgepart.devices.capability import OK, OpView, Support, predicate
from edgepart.ir.dtypes import DType

__all__: list[str] = []


@predicate("nnapi_signed_int8")
def nnapi_signed_int8(op: OpView) -> Support:
    """Signed int8 activations need NNAPI 1.3 (Android API 30)."""
    level = op.context.get("android_api_level")
    if level is None or int(level) >= 30:
        return OK
    for t in list(op.inputs) + list(op.outputs):
        if t >= 0 and not op.sg.tensor_is_constant[t] and op.dtype(t) == DType.INT8:
            return Support(False, "signed int8 tensors need NNAPI 1.3 (Android API 30)")
    return OK
