"""Stress: 10,000 concurrent-mode invokes and 1,000 streamed inputs, no leak, no wrong answer."""

from __future__ import annotations

import threading

import numpy as np
from ai_edge_litert.interpreter import Interpreter
from rt_models import branchy_mlp

from edgepart.bundle import PartitionSpec, build_bundle
from edgepart.runtime import PartitionedInterpreter
from edgepart.tflite.writer import write_model

WIDTH = 512  # boundary tensors of 2 KiB: one leaked buffer per invoke would add ~20 MB
LEAK_LIMIT = 4 << 20


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_ten_thousand_invokes_and_a_thousand_streamed_inputs():
    model = branchy_mlp(width=WIDTH, depth=2, branches=3, seed=3)
    specs = [
        PartitionSpec([0, 1]),
        PartitionSpec([2, 3], unit=1),
        PartitionSpec([4, 5], unit=2),
        PartitionSpec([6, 7]),
    ]
    pi = PartitionedInterpreter(bundle=build_bundle(model, specs, arena="boundary"))
    assert pi.parallel
    pi.allocate_tensors()
    ref = Interpreter(model_content=write_model(model))
    ref.allocate_tensors()
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((1, WIDTH)).astype(np.float32) for _ in range(16)]
    out = pi.get_output_details()[0]["index"]
    want = []
    for x in xs:
        ref.set_tensor(0, x)
        ref.invoke()
        want.append(ref.get_tensor(out))
    threads = threading.active_count()

    def invokes(n: int) -> None:
        for i in range(n):
            pi.set_tensor(0, xs[i % 16])
            pi.invoke()
            if not np.array_equal(pi.get_tensor(out), want[i % 16]):
                raise AssertionError(f"wrong result at invoke {i}")

    def stream(n: int) -> None:
        for i, y in enumerate(pi.run_stream([xs[i % 16]] for i in range(n))):
            if not np.array_equal(y[0], want[i % 16]):
                raise AssertionError(f"wrong streamed result for input {i}")

    invokes(1000)  # warm-up: allocator pools, thread pool, LiteRT caches
    stream(100)
    base = _rss()
    invokes(10_000)
    after_invokes = _rss()
    stream(1000)
    after_stream = _rss()
    assert after_invokes - base < LEAK_LIMIT, f"RSS grew {after_invokes - base} B over invokes"
    assert after_stream - base < LEAK_LIMIT, f"RSS grew {after_stream - base} B over streaming"
    pi.close()
    assert threading.active_count() <= threads
