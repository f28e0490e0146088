"""Malformed input never crashes the reader: it raises ModelFormatError or parses correctly.

Mutations (seeded): bit flips, random bytes, truncations, corrupted offsets and vtable entries,
inserted and deleted bytes, aimed at the flatbuffer's structure rather than at weight bytes
(flipping a weight is a valid model). A successful parse must also survive being used: every op
and tensor viewed, summarized, verified and written back, raising nothing but EdgepartError.
Each case is timed and its allocations traced (every third case's in the 10,000-case run), so a
hang or runaway memory fails the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from edgepart.errors import EdgepartError, ModelFormatError
from edgepart.ir.summary import describe_ops, summarize
from edgepart.ir.verify import verify_model
from edgepart.tflite.reader import read_model_bytes
from edgepart.tflite.writer import write_model

FUZZ_MODELS = (
    "mobilenet_v2_int8",
    "custom_op",
    "cond",
    "while_loop",
    "resource_vars",
    "lstm",
    "sparse_mlp",
    "multi_signature",
    "dynamic_batch",
    "transformer",
)
MAX_SECONDS_PER_CASE = 5.0


def structure_positions(data: bytes) -> np.ndarray:
    """Byte positions outside constant data: where mutations change the model's structure."""
    model = read_model_bytes(data)
    mask = np.ones(len(data), dtype=bool)
    b = model.buffers
    for i in np.flatnonzero(b.length > 64).tolist():
        mask[int(b.start[i]) : int(b.start[i] + b.length[i])] = False
    return np.flatnonzero(mask)


def mutate(data: bytes, where: np.ndarray, rng: np.random.Generator) -> tuple[bytes, str]:
    buf = bytearray(data)
    kind = int(rng.integers(0, 8))
    if kind == 0:
        flips = int(rng.integers(1, 9))
        for p in rng.choice(where, flips):
            buf[p] ^= 1 << int(rng.integers(0, 8))
        return bytes(buf), f"flip {flips} bits"
    if kind == 1:
        p = int(rng.choice(where))
        n = int(rng.integers(1, 16))
        buf[p : p + n] = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        return bytes(buf), f"random bytes at {p}"
    if kind == 2:
        cut = int(rng.integers(0, len(buf)))
        return bytes(buf[:cut]), f"truncate to {cut}"
    if kind in (3, 4):
        p = int(rng.choice(where)) & ~3
        old = int.from_bytes(buf[p : p + 4], "little")
        choices = [
            0,
            1,
            0xFFFFFFFF,
            0x7FFFFFFF,
            0x80000000,
            len(buf),
            len(buf) - 4,
            old + 4,
            old - 4,
            old * 2,
            int(rng.integers(0, 2**32)),
        ]
        new = choices[int(rng.integers(0, len(choices)))] & 0xFFFFFFFF
        buf[p : p + 4] = new.to_bytes(4, "little")
        return bytes(buf), f"offset at {p}: {old} -> {new}"
    if kind == 5:
        p = int(rng.choice(where)) & ~1
        new = int(rng.choice([0, 2, 3, 4, 0xFFFF, 0x7FFF, int(rng.integers(0, 2**16))]))
        buf[p : p + 2] = new.to_bytes(2, "little")
        return bytes(buf), f"u16 at {p} -> {new}"
    if kind == 6:
        p = int(rng.choice(where))
        n = int(rng.integers(1, 9))
        return bytes(buf[:p] + bytes(n) + buf[p:]), f"insert {n} at {p}"
    p = int(rng.choice(where))
    n = int(rng.integers(1, 9))
    return bytes(buf[:p] + buf[p + n :]), f"delete {n} at {p}"


def exercise(data: bytes) -> str:
    """Parse and use a model; returns 'error' or 'parsed'. Other exceptions propagate."""
    try:
        model = read_model_bytes(data, source="<fuzz>")
    except ModelFormatError:
        return "error"
    try:
        for sg in model.subgraphs:
            for i in range(sg.num_ops):
                sg.op(i)
            for t in range(sg.num_tensors):
                sg.tensor(t)
        summarize(model)
        describe_ops(model)
        verify_model(model)
        write_model(model)
    except EdgepartError:
        pass
    return "parsed"


def run_cases(
    corpus: dict[str, Path], total: int, seed: int, traced_every: int = 1
) -> dict[str, int]:
    """``total`` mutations of the fuzz models, each parsed and used, timed; the allocations of
    every ``traced_every``-th case traced (tracing makes a case about five times slower)."""
    originals = {n: corpus[n].read_bytes() for n in FUZZ_MODELS}
    positions = {n: structure_positions(d) for n, d in originals.items()}
    rng = np.random.default_rng(seed)
    counts = {"error": 0, "parsed": 0}
    try:
        for case in range(total):
            name = FUZZ_MODELS[case % len(FUZZ_MODELS)]
            data, how = mutate(originals[name], positions[name], rng)
            traced = case % traced_every == 0
            if traced:
                tracemalloc.start()
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]
            start = time.perf_counter()
            try:
                result = exercise(data)
            except Exception as err:  # the defect this test exists to find
                raise AssertionError(
                    f"case {case} ({name}, {how}): {type(err).__name__}: {err}"
                ) from err
            elapsed = time.perf_counter() - start
            assert elapsed < MAX_SECONDS_PER_CASE, f"case {case} ({name}, {how}) took {elapsed}s"
            if traced:
                peak = tracemalloc.get_traced_memory()[1] - base
                tracemalloc.stop()
                # the writer needs the output's size once more; parsing itself much less
                limit = 8 * len(data) + (8 << 20)
                assert peak < limit, f"case {case} ({name}, {how}) allocated {peak} bytes"
            counts[result] += 1
    finally:
        tracemalloc.stop()
    return counts


def test_fuzz_1000_mutations(corpus):
    counts = run_cases(corpus, 1000, seed=2026)
    assert counts["error"] > 100 and counts["parsed"] > 10, counts


@pytest.mark.slow
def test_fuzz_10000_mutations(corpus):
    """10,000 mutations in two processes of 5,000 (each its own seed), one per core; every case
    timed, every third one's allocations traced (3 is prime to the 10 models, so each model's
    mutations are traced): a traced case takes about 15 ms, an untraced one 3."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    paths = {n: corpus[n] for n in FUZZ_MODELS}
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        parts = list(pool.map(run_cases, [paths, paths], [5_000, 5_000], [7, 8], [3, 3]))
    assert [sum(c.values()) for c in parts] == [5_000, 5_000]
    assert all(c["error"] > 500 and c["parsed"] > 50 for c in parts), parts


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"TFL3",
        b"\x00" * 7,
        b"\x08\x00\x00\x00TFL3",
        b"\xff" * 64,
        bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)),
    ],
    ids=["empty", "ident-only", "zeros", "root-only", "ones", "random"],
)
def test_garbage_raises_model_format_error(data):
    with pytest.raises(ModelFormatError):
        read_model_bytes(data)


def test_wrong_file_identifier(corpus):
    data = bytearray(corpus["mobilenet_v2"].read_bytes())
    data[4:8] = b"ONNX"
    with pytest.raises(ModelFormatError, match="file identifier is b'ONNX', expected b'TFL3'"):
        read_model_bytes(bytes(data))


def test_every_truncation_of_a_small_model(corpus):
    data = corpus["cond"].read_bytes()
    step = max(1, len(data) // 2000)
    for cut in range(0, len(data), step):
        with pytest.raises(ModelFormatError):
            read_model_bytes(data[:cut])


def test_all_reader_paths_agree(corpus, monkeypatch):
    """The C walker, the C column primitives, the vectorized NumPy path and the scalar path for
    small columns parse identically, and fail with identical messages."""
    from edgepart.tflite import flatbuf, reader

    rng = np.random.default_rng(5)
    cases = []
    for name in FUZZ_MODELS[:5]:
        data = corpus[name].read_bytes()
        where = structure_positions(data)
        cases.append(data)
        cases.extend(mutate(data, where, rng)[0] for _ in range(60))

    def outcome(data: bytes) -> object:
        # Buffer tables are verified on first use, so a defect there surfaces in the writer.
        try:
            return ("ok", write_model(read_model_bytes(data)))
        except ModelFormatError as err:
            return ("error", str(err))

    walker = [outcome(d) for d in cases]
    with monkeypatch.context() as mp:
        mp.setattr(reader, "ACCELERATE", False)
        native = [outcome(d) for d in cases]
    runs = {}
    for label, small in (("numpy", flatbuf.SMALL), ("vectorized", 0), ("scalar", 10**9)):
        with monkeypatch.context() as mp:
            mp.setattr(reader, "ACCELERATE", False)
            mp.setattr(flatbuf, "ACCELERATE", False)
            mp.setattr(flatbuf, "SMALL", small)
            runs[label] = [outcome(d) for d in cases]
    # The C paths defer to the NumPy path on any defect, so even the messages are identical.
    assert walker == native == runs["numpy"]
    # The vectorized and scalar paths check the same things; when a file has several defects
    # they may name a different one first, but they agree on success, failure and results.
    kinds = {label: [r[0] for r in rs] for label, rs in runs.items()}
    assert kinds["vectorized"] == kinds["scalar"] == kinds["numpy"]
    assert kinds["numpy"].count("ok") > 5 and kinds["numpy"].count("error") > 50
    for v, s in zip(runs["vectorized"], runs["scalar"], strict=True):
        if v[0] == "ok":
            assert v == s


def test_cli_prints_one_line_and_exits_2(corpus, tmp_path):
    data = corpus["cond"].read_bytes()
    rng = np.random.default_rng(11)
    where = structure_positions(data)
    bad = [data[: len(data) // 2], b"\x00" * 100, data[:4] + b"XXXX" + data[8:]]
    while len(bad) < 8:
        mutated, _ = mutate(data, where, rng)
        try:
            read_model_bytes(mutated)
        except ModelFormatError:
            bad.append(mutated)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    for k, blob in enumerate(bad):
        path = tmp_path / f"bad{k}.tflite"
        path.write_bytes(blob)
        proc = subprocess.run(
            [sys.executable, "-m", "edgepart", "inspect", str(path)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("edgepart: error: "), proc.stderr
        assert str(path) in lines[0]
        assert proc.stdout == ""
