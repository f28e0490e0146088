"""Memory as LiteRT allocates it (issue 19, point 4 and problem 5), checked against LiteRT on
fp16, sparse, int8 and stateful models:

* the read-write arena exactly (``compare`` of ``test_memory_tflite_arena``: LiteRT's tensor
  pointers after ``allocate_tensors``, builtin kernels, kernel temporaries attributed per op);
* the persistent arena: dequantized fp16 weights and densified sparse weights stay for the
  whole run (they were planned as if they could share memory);
* everything the interpreter allocates with XNNPACK (LiteRT's default), from before the
  interpreter is built to after a first invoke, minus the same for a one-op model (the
  runtime's fixed part), within 10%: the heap growth glibc reports (``mallinfo2``) against
  :attr:`RuntimeMemory.total`, and the growth of *anonymous* resident memory (``RssAnon``: code
  pages left out) against :attr:`RuntimeMemory.resident`. Resident is not heap: a subgraph
  reserves about 40 KB and touches a third of it, small structures cost more than their size.

Each measurement is the mean over four child processes whose heaps start at different offsets
within a page, each holding 8 interpreters of the model, after glibc returned its free pages
(``malloc_trim``), so pages an earlier interpreter touched do not hide new ones
(``tools/measure_bookkeeping.py``). Which pages a small model's allocations touch moves with
where the heap starts: in one process with 4 interpreters mww_alexa's resident figure spanned
-4.8..-10.4 % over environment sizes (it failed this test once, after TensorFlow, imported by
another test, grew the environment), and a subgraph's resident bookkeeping 11.7-15.4 KB.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import measure_bookkeeping
import numpy as np
import pytest
from test_memory_tflite_arena import compare

import edgepart
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.shapes import apply_input_shapes
from edgepart.memory.runtime import BOOKKEEPING_PER_OP, BOOKKEEPING_PER_SUBGRAPH, runtime_memory
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import save_model

COPIES = 8


def _one_op(path: Path) -> None:
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4))
    c = g.constant("c", np.ones((1, 4), np.float32))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    g.op("ADD", [x, c], [y])
    g.output(y)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", y)])
    save_model(mb.build(), path)


@pytest.fixture(scope="module")
def fixed_part(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    """The heap and anonymous resident growth a one-op model's interpreter takes with
    XNNPACK: the runtime's fixed part."""
    path = tmp_path_factory.mktemp("one_op") / "add.tflite"
    _one_op(path)
    return measure_bookkeeping.measure(path, copies=COPIES)


# (kind, corpus, model): fp16 weights, sparse weights, int8, resource variables
HEAP_MODELS = [
    ("fp16", "real", "mp_pose_landmark_full"),
    ("fp16", "real", "mp_hand_landmark_full"),
    ("fp16", "corpus", "mobilenet_v2_fp16"),
    ("sparse", "real", "mp_pose_detection"),
    ("sparse", "real", "mp_face_detection_full_range_sparse"),
    ("int8", "corpus", "mobilenet_v2_int8"),
    ("stateful", "real", "mww_okay_nabu"),
    ("stateful", "real", "mww_alexa"),  # 8-bit
    ("stateful", "corpus", "resource_vars"),
]
ARENA_MODELS = [
    ("fp16", "real", "mp_hand_landmark_full"),
    ("fp16", "corpus", "mobilenet_v2_fp16"),
    ("sparse", "real", "mp_pose_detection"),
    ("sparse", "corpus", "sparse_mlp"),
    ("int8", "corpus", "mobilenet_v2_int8"),
    ("stateful", "real", "mww_okay_nabu"),
]


def _path(where: str, name: str, request: pytest.FixtureRequest) -> Path:
    models = request.getfixturevalue("real_models" if where == "real" else "corpus")
    return Path(models[name])


@pytest.mark.slow
@pytest.mark.parametrize("kind,where,name", ARENA_MODELS, ids=[m[2] for m in ARENA_MODELS])
def test_arena_exactly_as_litert(
    kind: str, where: str, name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    res = compare(_path(where, name, request), tmp_path)
    assert res["ours_with_temporaries"] == res["litert"], res
    assert res["same_offsets"] == res["tensors"], res


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind,where,name",
    HEAP_MODELS,
    ids=[m[2] if isinstance(m, tuple) else m.values[2] for m in HEAP_MODELS],
)
def test_what_litert_allocates_with_xnnpack(
    kind: str, where: str, name: str, request: pytest.FixtureRequest, fixed_part: dict[str, float]
) -> None:
    path = _path(where, name, request)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = apply_input_shapes(read_model(path))
    predicted = runtime_memory(model, executor="xnnpack")
    measured = measure_bookkeeping.measure(path, copies=COPIES)
    heap = measured["heap"] - fixed_part["heap"]
    assert abs(predicted.total - heap) <= 0.10 * heap, (name, predicted.total, heap)
    resident = measured["resident"] - fixed_part["resident"]
    assert abs(predicted.resident - resident) <= 0.10 * resident, (name, predicted, resident)


def test_fp16_weights_stay_allocated_for_the_whole_run(real_models: dict[str, Path]) -> None:
    """Problem 5: the pose model's fp16 weights dequantized to fp32 (12.7 MB) are TFLite
    persistent tensors; they were planned as if they could share memory (996,480 B)."""
    plans = edgepart.plan_memory(real_models["mp_pose_landmark_full"], strategies=["tflite"])
    persistent = plans.plans["tflite"].arenas["sg0/persistent"].size
    assert persistent >= 12_600_000
    builtin = plans.runtime["model (builtin)"]
    assert builtin.dequantized >= 12_600_000 and builtin.persistent == builtin.dequantized
    text = plans.report()
    assert "dequantized 12.09 MiB" in text


def test_densified_weights_are_persistent_and_xnnpack_keeps_its_dense_copy(
    real_models: dict[str, Path],
) -> None:
    m = read_model(real_models["mp_pose_detection"])
    builtin = runtime_memory(m, executor="builtin")
    xnn = runtime_memory(m, executor="xnnpack")
    assert builtin.densified > 5_000_000
    n_densify = sum(m.main.op_name(i) == "DENSIFY" for i in range(m.main.num_ops))
    # the same dense copies: TFLite's aligned to 64 bytes each
    assert 0 <= builtin.densified - xnn.xnnpack_unpacked < 64 * n_densify
    assert xnn.persistent == 0 and xnn.delegate_partitions == 1


def test_bundle_memory_per_partition_and_in_all(corpus: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "b"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        edgepart.compile(corpus["mobilenet_v2_fp16"], "x86_host").save(out)
    plans = edgepart.plan_memory(out, strategies=["tflite"])
    assert plans.runtime is not None
    parts = [k for k in plans.runtime if k != "all"]
    assert parts and plans.runtime["all"].total == sum(plans.runtime[k].total for k in parts)
    assert "as LiteRT allocates it" in plans.report()


@pytest.mark.parametrize(
    "row,key,kind",
    [
        ("add", "xnnpack", ""),
        ("conv_8bit", "xnnpack_8bit", "CONV_2D"),
        ("builtin_dw", "builtin", "DEPTHWISE_CONV_2D"),
        ("partition", "xnnpack", "partition"),
    ],
)
def test_bookkeeping_rows_are_what_this_litert_takes(row: str, key: str, kind: str) -> None:
    """The tables of edgepart.memory.runtime against a fresh measurement by the script that
    made them (a LiteRT release that changes its structures shows here first)."""
    heap, resident = BOOKKEEPING_PER_OP[key][kind]
    got = measure_bookkeeping.ROWS[row](COPIES)
    assert abs(got["heap"] - heap) <= 0.10 * heap, (row, got, heap)
    assert abs(got["resident"] - resident) <= 0.10 * resident, (row, got, resident)


def test_a_subgraph_reserves_more_than_it_touches() -> None:
    heap, resident = BOOKKEEPING_PER_SUBGRAPH
    got = measure_bookkeeping.subgraph_row("xnnpack", copies=COPIES)
    assert abs(got["heap"] - heap) <= 0.10 * heap, got
    assert abs(got["resident"] - resident) <= 0.15 * resident, got
    assert got["resident"] < 0.5 * got["heap"]
