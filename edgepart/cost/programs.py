"""Ops whose work the cost model cannot see: compiled accelerator programs.

An ``edgetpu-custom-op`` is a whole compiled sub-model (the Edge TPU executable in its options);
its FLOPs and bytes are not in the graph, so a roofline of it would be a guess dressed as a
figure. Its latency is *unknown* unless a latency table measured it; the reason names what the
compiler itself estimated (cycles), decoded from the program.
"""

from __future__ import annotations

from edgepart.devices.delegate import accelerator_kernels
from edgepart.ir.graph import Subgraph
from edgepart.tflite.edgetpu import EDGETPU_OP, decode_edgetpu_program

__all__ = ["compiled_programs"]


def compiled_programs(sg: Subgraph) -> dict[int, str]:
    """Op index -> why its latency is unknown, for every compiled-program op of ``sg``."""
    kernels = accelerator_kernels()
    out: dict[int, str] = {}
    for op in range(sg.num_ops):
        name = sg.op_name(op)
        if name not in kernels:
            continue
        why = f"{name} is a compiled program whose work the graph does not show"
        if name == EDGETPU_OP:
            prog = decode_edgetpu_program(sg.op_custom_options[op] or b"")
            if prog.estimated_cycles:
                why += f" (the compiler estimates {prog.estimated_cycles:,} TPU cycles)"
        out[op] = why + "; give a latency table measured on the device to cost it"
    return out
