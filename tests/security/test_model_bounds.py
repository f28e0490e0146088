"""Bounded work on hostile models: shared tables, degenerate tables, overflowing shapes,
values the writer could not write back, and ops with too few operands."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from crafted_models import empty_ops, operators
from sec_helpers import ROOT, cli, one_line_error

import edgepart
from edgepart.errors import EdgepartError, ModelFormatError
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.schema import opnames
from edgepart.tflite import reader
from edgepart.tflite.flatbuf import FlatBuffer
from edgepart.tflite.reader import read_model, read_model_bytes
from edgepart.tflite.walk import native_columns
from edgepart.tflite.writer import write_model

RSS_PROBE = r"""
import sys
from edgepart.tflite import reader
from edgepart.errors import ModelFormatError
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) * 1024
reader.ACCELERATE = sys.argv[2] == "c"
reader.read_model(sys.argv[3])  # imports and caches warm
base = hwm()
try:
    reader.read_model(sys.argv[1])
    print("parsed", hwm() - base)
except ModelFormatError as err:
    print("refused", hwm() - base, err)
"""


@pytest.fixture(params=["c", "numpy"])
def path_kind(request, monkeypatch):
    monkeypatch.setattr(reader, "ACCELERATE", request.param == "c")
    return request.param


def test_a_shared_operator_table_is_refused(path_kind):
    with pytest.raises(ModelFormatError, match="a table referenced twice"):
        read_model_bytes(operators(100, share=True))
    assert read_model_bytes(operators(100, share=False)).main.num_ops == 100


@pytest.mark.parametrize("pad", [0, 16 << 20], ids=["dense", "after_16mb_of_weights"])
def test_a_table_shared_after_thousands_of_others_is_refused(path_kind, pad):
    """The readers remember every table they visited, densely packed (a small file: the C
    walker keeps a bitmap) or few in a large file (a set that grows with the tables)."""
    aliased = operators(5000, share=False, alias_last=True, pad=pad)
    distinct = operators(5000, share=False, pad=pad)
    assert len(distinct) > pad
    with pytest.raises(ModelFormatError, match="a table referenced twice"):
        read_model_bytes(aliased)
    assert read_model_bytes(distinct).main.num_ops == 5000
    if path_kind == "c":  # the walker itself refuses the one and reads the other
        walked = [
            native_columns(FlatBuffer(d, "m"), FlatBuffer(d, "m").root_position(b"TFL3"))
            for d in (aliased, distinct)
        ]
        assert walked[0] is None and walked[1] is not None


@pytest.mark.parametrize("path_kind", ["c", "numpy"])
def test_shared_tables_cost_little_memory(tmp_path, path_kind, corpus):
    """The issue's 16 MB file: one Operator table listed 4 million times took 1.06 GB (C walker)
    and 1.52 GB (NumPy reader). Refused now, having used a small multiple of the file."""
    f = tmp_path / "alias.tflite"
    f.write_bytes(operators(4_000_000, share=True))
    out = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, str(f), path_kind, str(corpus["cond"])],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=True,
    ).stdout.split(maxsplit=2)
    assert out[0] == "refused", out
    assert int(out[1]) < 4 * f.stat().st_size, out
    assert "more than fit" in out[2]


def test_densely_packed_tables_in_a_large_file_are_all_remembered():
    """Over 8 MiB of nothing but tables: the C walker's set outgrows a bit per 4 bytes of the
    file and moves to that bitmap, still catching a table listed twice."""
    aliased = operators(220_000, share=False, alias_last=True)
    distinct = operators(220_000, share=False)
    assert len(distinct) > 8 << 20
    fbs = [FlatBuffer(d, "m") for d in (aliased, distinct)]
    walked = [native_columns(fb, fb.root_position(b"TFL3")) for fb in fbs]
    assert walked[0] is None and walked[1] is not None
    assert len(walked[1].o_opcode) == 220_000


def test_degenerate_tables_are_bounded_by_the_file_size(path_kind):
    with pytest.raises(ModelFormatError, match=r"2000000 operators, 0 tensors and 0 buffers"):
        read_model_bytes(empty_ops(2_000_000))
    assert read_model_bytes(empty_ops(500)).main.num_ops == 500  # small files have slack


def test_every_corpus_model_is_within_the_bounds(corpus):
    for name, path in corpus.items():
        m = read_model(path)
        assert m.subgraphs, name


def _huge_shape_model(shape: tuple[int, ...]) -> bytes:
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, shape)
    y = g.tensor("y", DType.FLOAT32, shape)
    g.op("RELU", [x], [y])
    g.output(y)
    return write_model(mb.build())


def test_a_shape_beyond_64_bit_sizes_is_refused(tmp_path):
    f = tmp_path / "huge.tflite"
    f.write_bytes(_huge_shape_model((2**31 - 1, 2**31 - 1)))
    for cmd in (["inspect", str(f)], ["roofline", str(f), "--profile", "pixel8"]):
        one_line_error(cli(*cmd), "tensor #0 has shape [2147483647, 2147483647]", "2^56")
    # the largest allowed shape keeps every byte count positive
    m = read_model_bytes(_huge_shape_model((2**28, 2**28)))
    assert int(m.main.tensor_nbytes.min()) > 0
    info = edgepart.inspect_model(m)
    assert "-" not in json.dumps(info.to_dict(), default=str).split('"bytes"')[-1][:3]


def test_sparse_format_the_writer_cannot_write_is_refused(corpus):
    """DimensionMetadata.format 7 is no DimensionType: the writer raised KeyError('7')."""
    data = bytearray(corpus["sparse_mlp"].read_bytes())
    found = None
    for p in np.flatnonzero(np.frombuffer(bytes(data), np.uint8) == 1).tolist():
        data[p] = 7
        try:
            m = read_model_bytes(bytes(data))
            [m.main.tensor(t).sparsity for t in range(m.main.num_tensors)]
        except ModelFormatError as err:
            if "DimensionType" in str(err):
                found = str(err)
                data[p] = 1
                break
        except EdgepartError:
            pass
        data[p] = 1
    assert found is not None and "format is 7, not a DimensionType (DENSE, SPARSE_CSR)" in found


@pytest.mark.parametrize(
    ("op", "n_in", "n_out"),
    [
        ("SLICE", 0, 1),
        ("STRIDED_SLICE", 1, 1),
        ("BATCH_MATMUL", 0, 1),
        ("DEPTHWISE_CONV_2D", 0, 1),
        ("REDUCE_MAX", 1, 1),
        ("MIRROR_PAD", 1, 1),
        ("DEQUANTIZE", 0, 1),
        ("QUANTIZE", 0, 1),
        ("ASSIGN_VARIABLE", 0, 1),
        ("VAR_HANDLE", 1, 0),
    ],
)
def test_ops_with_too_few_operands_are_refused_not_crashed(op, n_in, n_out):
    """Each raised IndexError in a claim helper or capability predicate before."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 8, 8, 4))
    outs = [g.tensor("y", DType.FLOAT32, (1, 8, 8, 4))] * n_out
    g.op(op, [x] * n_in, outs)
    for o in outs:
        g.output(o)
    m = read_model_bytes(write_model(mb.build()))
    for device in edgepart.device_names():
        info = edgepart.inspect_model(m, device=device)
        assert info.report()
        with contextlib.suppress(EdgepartError):
            edgepart.place(m, device)


def test_every_builtin_with_missing_operands(tmp_path):
    """The CLI on every builtin op with no inputs: one line or a report, never a traceback."""
    mb = ModelBuilder()
    g = mb.subgraph("main")
    g.input("x", DType.FLOAT32, (1, 8, 8, 4))
    for k, name in enumerate(sorted(n for n in opnames.BUILTIN_CODES if n != "CUSTOM")):
        y = g.tensor(f"y{k}", DType.FLOAT32, (1, 8, 8, 4))
        g.op(name, [], [y])
        g.output(y)
    f = tmp_path / "all.tflite"
    f.write_bytes(write_model(mb.build()))
    for device in ("pixel8", "galaxy_s24_ultra", "coral_devboard"):
        proc = cli("inspect", str(f), "--profile", device)
        assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        proc = cli("partition", str(f), "--profile", device)
        assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr, proc.stderr[-3000:]


def test_inspect_json_is_always_json(tmp_path):
    """NaN is not JSON: a NaN quantization scale or option printed ``NaN`` before; non-finite
    values are written as null."""
    from edgepart import jsondoc
    from edgepart.ir.values import Quantization

    doc = {"a": float("nan"), "b": [float("inf"), 1.5], "c": np.float32("nan")}
    assert json.loads(jsondoc.text(doc)) == {"a": None, "b": [None, 1.5], "c": None}
    nan = np.array([np.nan], np.float32)
    q = Quantization(scale=nan, zero_point=np.zeros(1, np.int64), quantized_dimension=0)
    for k, (dt, op, opts, quant) in enumerate(
        [(DType.INT8, "RELU", None, q), (DType.FLOAT32, "LEAKY_RELU", {"alpha": np.nan}, None)]
    ):
        mb = ModelBuilder()
        g = mb.subgraph("main")
        x = g.input("x", dt, (1, 8), quantization=quant)
        y = g.tensor("y", dt, (1, 8), quantization=quant)
        g.op(op, [x], [y], options=opts)
        g.output(y)
        f = tmp_path / f"nan{k}.tflite"
        f.write_bytes(write_model(mb.build()))
        for extra in ([], ["--profile", "pixel8"]):
            proc = cli("inspect", str(f), "--json", "--ops", *extra)
            assert proc.returncode == 0, proc.stderr
            doc = json.loads(proc.stdout, parse_constant=lambda c: pytest.fail(f"{c} in output"))
            assert "null" in proc.stdout and doc


def test_a_fifo_as_model_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "model.tflite"
    os.mkfifo(fifo)
    for cmd in (
        ["inspect", str(fifo)],
        ["partition", str(fifo), "--profile", "pixel8"],
        ["profile", str(fifo)],
        ["roofline", str(fifo), "--profile", "pixel8"],
    ):
        one_line_error(cli(*cmd, timeout=60), f"{fifo}: is a FIFO (named pipe), not a regular file")


def test_devices_as_inputs_are_never_read(tmp_path):
    link = tmp_path / "zero.tflite"
    link.symlink_to("/dev/zero")
    one_line_error(cli("inspect", str(link), timeout=60), "is a character device")
    Path(tmp_path / "g.json").symlink_to("/dev/zero")
    one_line_error(cli("partition", "--graph", str(tmp_path / "g.json"), timeout=60), "character")
