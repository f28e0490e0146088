"""Make real edgepart bundles and the Python side's reference data for the bundle-core JVM tests.

Usage: ``python make_fixtures.py OUT_DIR``. Writes into ``OUT_DIR``:

``bundles/<name>/``
    Bundles written by :func:`edgepart.bundle.write_bundle` from real models.
``expected/<name>.json``
    What the Python side computes for the bundle: partition order, the runtime's routing
    (:func:`edgepart.runtime.routing.plan_routes`) and, per partition input, which signature
    name of which producer it is routed from.
``trace/<name>/``
    One real inference of the bundle with :class:`edgepart.runtime.PartitionedInterpreter`
    (seeded inputs): every model input, boundary tensor and model output as raw bytes, plus
    the original model's outputs (plain LiteRT interpreter) and their max abs difference.
``corrupt/<case>/`` and ``corrupt.json``
    Damaged copies of a bundle with the one-line message Python's ``load_bundle`` raises.
``index.json``
    The list of fixtures and cases.

Everything is deterministic (fixed seeds, sorted JSON).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

# this checkout's edgepart (the one under test), whatever else is installed
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import edgepart
from edgepart.bundle import PartitionSpec, load_bundle, write_bundle
from edgepart.bundle.format import Plan
from edgepart.errors import BundleError, UsageError
from edgepart.ir import analysis
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.ir.graph import Model
from edgepart.runtime.routing import plan_routes
from edgepart.runtime.shards import shard_groups
from edgepart.tflite.reader import read_model
from edgepart.tflite.writer import save_model

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "examples" / "models"

# Real-model corpus models (tools/real_models.py), partitioned by edgepart as a user would:
# (name, device profile, input sizes). A three-way split of fp16 weights over cpu/gpu/npu, an
# IF body with an empty shape constant, a streaming model with resource variables and
# CALL_ONCE, and an audio front end with a [-1, -1] input given a size.
REAL = (
    ("mp_pose_landmark_full", "pixel8", {}),
    ("oww_hey_jarvis", "pixel8", {}),
    ("mww_okay_nabu", "x86_host", {}),
    ("oww_melspectrogram", "pixel8", {"input": [1, 1760]}),
)


def branchy(branches: int = 3, width: int = 32, depth: int = 2) -> Model:
    """``x -> branches x (FC+RELU)^depth -> ADD chain -> y``, no signature (tensor names only)."""
    rng = np.random.default_rng(7)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, width))
    ends = []
    for b in range(branches):
        h = x
        for d in range(depth):
            w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
            bias = (rng.standard_normal(width) * 0.1).astype(np.float32)
            out = g.tensor(f"h{b}_{d}", DType.FLOAT32, (1, width))
            g.op(
                "FULLY_CONNECTED",
                [h, g.constant(f"w{b}_{d}", w), g.constant(f"b{b}_{d}", bias)],
                [out],
                options={"fused_activation_function": "RELU"},
            )
            h = out
        ends.append(h)
    acc = ends[0]
    for k, e in enumerate(ends[1:]):
        out = g.tensor(f"sum{k}", DType.FLOAT32, (1, width))
        g.op("ADD", [acc, e], [out])
        acc = out
    g.output(acc)
    return mb.build()


def contiguous(model: Model, cuts: list[int]) -> list[list[int]]:
    """Ranges of a topological order split at ``cuts`` (always convex)."""
    order = analysis.topological_order(model.main).tolist()
    bounds = [0, *cuts, len(order)]
    return [order[a:b] for a, b in itertools.pairwise(bounds)]


def make_bundles(root: Path) -> dict[str, Path]:
    """The fixture bundles; returns name -> source model path (``None`` if built in memory)."""
    out: dict[str, Any] = {}
    mnv2 = MODELS / "mobilenet_v2.tflite"
    model = read_model(mnv2)
    pieces = contiguous(model, [20, 45, 60])
    procs = [("cpu", None), ("gpu", None), ("tpu", None), ("cpu", "builtin")]
    # predictions are fixture inputs here (parsed and displayed), not measurements
    specs = [
        PartitionSpec(
            ops,
            processor=proc,
            executor=ex,
            predicted={"start_s": 0.001 * k, "end_s": 0.001 * (k + 1), "duration_s": 0.001},
        )
        for k, (ops, (proc, ex)) in enumerate(zip(pieces, procs, strict=True))
    ]
    write_bundle(
        root / "mnv2_pixel8",
        model,
        specs,
        profile="pixel8",
        arena="boundary",
        source_path=mnv2,
        plan_extra={"predicted": {"latency_s": 0.004, "baseline_latency_s": 0.005}},
    )
    # the original model next to the plan (unlisted: loaders ignore it) for the comparison run
    shutil.copyfile(mnv2, root / "mnv2_pixel8" / mnv2.name)
    out["mnv2_pixel8"] = mnv2

    int8 = MODELS / "mobilenet_v2_int8.tflite"
    m8 = read_model(int8)
    write_bundle(
        root / "mnv2_int8",
        m8,
        [
            PartitionSpec(o, processor=p)
            for o, p in zip(contiguous(m8, [30, 50]), ("cpu", "gpu", "cpu"), strict=True)
        ],
        profile="pixel8",
        source_path=int8,
    )
    out["mnv2_int8"] = int8

    # whole branches on different units: they may run concurrently; x feeds three partitions
    br = branchy()
    ops = br.main.num_ops  # 3 branches x 2 FC, then 2 ADDs
    write_bundle(
        root / "branchy_nosig",
        br,
        [
            PartitionSpec([0, 1], processor="cpu", unit=0),
            PartitionSpec([2, 3], processor="gpu", unit=0),
            PartitionSpec([4, 5], processor="cpu", unit=1, threads=2),
            PartitionSpec(list(range(6, ops)), processor="cpu", unit=0, id="tail"),
        ],
        profile="pixel8",
    )
    out["branchy_nosig"] = None

    # tensor parallelism (plan.json version 2): two chained convolutions the partitioner splits
    # across the two single-thread CPU units of the host profile (output channels, exact)
    convs = root.parent / "two_convs.tflite"
    save_model(two_convs(), convs)
    compiled = edgepart.compile(convs, REPO / "examples" / "profiles" / "host_2x1t.yaml")
    if not compiled.plan.splits:
        raise AssertionError("the partitioner took no split for the two_convs fixture")
    compiled.save(root / "split_convs")
    out["split_convs"] = convs
    out.update(real_bundles(root))
    return out


def real_bundles(root: Path) -> dict[str, Path]:
    """Bundles of real-model corpus models, placed by the partitioner (``edgepart.compile``)."""
    import edgepart

    sys.path.insert(0, str(REPO / "tools"))
    import real_models

    out: dict[str, Path] = {}
    for name, profile, shapes in REAL:
        src = real_models.ensure(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = edgepart.compile(src, profile, input_shapes=shapes or None)
        compiled.save(root / f"real_{name}")
        out[f"real_{name}"] = src
    return out


def two_convs() -> Model:
    """``x -> CONV_2D(32->48, RELU) -> CONV_2D(48->64) -> y`` (seeded weights, a signature)."""
    rng = np.random.default_rng(11)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 16, 16, 32))
    h = x
    for k, (cin, cout, act) in enumerate(((32, 48, "RELU"), (48, 64, "NONE"))):
        w = (rng.standard_normal((cout, 3, 3, cin)) / np.sqrt(9 * cin)).astype(np.float32)
        b = (rng.standard_normal(cout) * 0.1).astype(np.float32)
        y = g.tensor(f"conv{k}", DType.FLOAT32, (1, 16, 16, cout))
        g.op(
            "CONV_2D",
            [h, g.constant(f"w{k}", w), g.constant(f"b{k}", b)],
            [y],
            options={
                "padding": "SAME",
                "stride_w": 1,
                "stride_h": 1,
                "fused_activation_function": act,
            },
        )
        h = y
    g.output(h)
    mb.add_signature("serving_default", 0, [("x", x)], [("y", h)])
    return mb.build()


def expected_routes(plan: Plan) -> dict[str, Any]:
    """The Python runtime's routing of ``plan`` as plain JSON (the JVM side must match it)."""
    r = plan_routes(plan)
    parts = plan.partitions
    model_in = {t.tensor: t.name for t in plan.inputs}
    out_name = {(k, t.tensor): t.name for k, p in enumerate(parts) for t in p.outputs}
    by_name = []
    for k, p in enumerate(parts):
        pulled = {local: (j, out) for local, j, out in r.pulls[k]}
        row = []
        for t in p.inputs:
            if t.tensor in model_in:
                row.append(
                    {
                        "input": t.name,
                        "tensor": t.tensor,
                        "from": None,
                        "from_name": model_in[t.tensor],
                    }
                )
            else:
                j, out_local = pulled[t.index]
                out_t = next(o.tensor for o in parts[j].outputs if o.index == out_local)
                row.append(
                    {
                        "input": t.name,
                        "tensor": t.tensor,
                        "from": parts[j].id,
                        "from_name": out_name[(j, out_t)],
                    }
                )
        by_name.append(row)
    return {
        "order": [p.id for p in parts],
        "units": list(r.units),
        "deps": [list(d) for d in r.graph.deps],
        "pulls": [[list(x) for x in row] for row in r.pulls],
        "input_targets": [[t, [list(x) for x in v]] for t, v in sorted(r.input_targets.items())],
        "homes": [[t, k, local] for t, (k, local) in sorted(r.homes.items())],
        "waits": [list(w) for w in r.waits],
        "unit_lists": [list(u) for u in r.unit_lists],
        "parallel": r.parallel,
        "staged": r.graph.staged_tensors(),
        "by_name": by_name,
        "splits": [g.to_dict() for g in shard_groups(plan, r, r.parallel)],
    }


def random_input(dtype: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)


def trace(name: str, bundle_dir: Path, source: Path | None, out: Path) -> dict[str, Any]:
    """Run the bundle once with the real Python runtime and record every boundary tensor."""
    from ai_edge_litert.interpreter import Interpreter

    from edgepart.runtime import HostFallbackWarning, PartitionedInterpreter

    out.mkdir(parents=True)
    rng = np.random.default_rng(1234)
    with warnings.catch_warnings():
        # host fallback for gpu/nnapi partitions is expected here: the trace records values
        warnings.simplefilter("ignore", HostFallbackWarning)
        pi = PartitionedInterpreter(str(bundle_dir), parallel=False)
    with pi:
        plan = pi.plan
        pi.allocate_tensors()
        inputs = [random_input(t.dtype, t.shape, rng) for t in plan.inputs]
        for t, v in zip(plan.inputs, inputs, strict=True):
            pi.set_tensor(t.tensor, v)
        pi.invoke()
        tensors = {t.tensor for t in plan.inputs} | {t.tensor for t in plan.outputs}
        for p in plan.partitions:
            tensors |= {t.tensor for t in p.inputs} | {t.tensor for t in p.outputs}
        for ti in sorted(tensors):
            (out / f"t{ti}.bin").write_bytes(pi.get_tensor(ti).tobytes())
        got = [pi.get_tensor(t.tensor) for t in plan.outputs]
    doc: dict[str, Any] = {"tensors": sorted(tensors), "original": None}
    if source is not None:
        it = Interpreter(model_path=str(source))
        for t in plan.inputs:  # the sizes the bundle was built for (a dynamic input's)
            if t.shape_signature is not None and -1 in t.shape_signature:
                it.resize_tensor_input(t.tensor, list(t.shape))
        it.allocate_tensors()
        for d, v in zip(it.get_input_details(), inputs, strict=True):
            it.set_tensor(d["index"], v)
        it.invoke()
        ref = [it.get_tensor(d["index"]) for d in it.get_output_details()]
        for i, r in enumerate(ref):
            (out / f"original_out{i}.bin").write_bytes(r.tobytes())
        doc["original"] = {
            "outputs": len(ref),
            "max_abs_diff": [
                float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
                for a, b in zip(got, ref, strict=True)
            ],
        }
    return doc


def _rehash(bundle: Path, rel: str) -> None:
    """Record ``rel``'s new size and digest in the manifest (a consistent but edited bundle)."""
    man_path = bundle / "manifest.json"
    man = json.loads(man_path.read_text())
    data = (bundle / rel).read_bytes()
    for e in man["files"]:
        if e["path"] == rel:
            e["bytes"] = len(data)
            e["sha256"] = hashlib.sha256(data).hexdigest()
    man_path.write_text(json.dumps(man, sort_keys=True, indent=1) + "\n")


def _edit_plan(bundle: Path, fn: Any) -> None:
    path = bundle / "plan.json"
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
    _rehash(bundle, "plan.json")


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def _manifest_version(bundle: Path) -> None:
    man = json.loads((bundle / "manifest.json").read_text())
    man["version"] = 2
    (bundle / "manifest.json").write_text(json.dumps(man, sort_keys=True, indent=1) + "\n")


def _set(key: str, value: Any, part: int | None = None) -> Any:
    def fn(doc: dict[str, Any]) -> None:
        (doc if part is None else doc["partitions"][part])[key] = value

    return fn


def _drop(key: str, part: int) -> Any:
    def fn(doc: dict[str, Any]) -> None:
        del doc["partitions"][part][key]

    return fn


def _set_input_dtype(doc: dict[str, Any]) -> None:
    doc["partitions"][2]["inputs"][0]["dtype"] = "float8"


def _manifest_extra(bundle: Path) -> None:
    man = json.loads((bundle / "manifest.json").read_text())
    man["signed_by"] = "nobody"
    (bundle / "manifest.json").write_text(json.dumps(man, sort_keys=True, indent=1) + "\n")


def _drop_last_op(doc: dict[str, Any]) -> None:
    doc["partitions"][-1]["ops"].pop()


def _swap_first_two(doc: dict[str, Any]) -> None:
    parts = doc["partitions"]
    parts[0], parts[1] = parts[1], parts[0]


CASES: dict[str, Any] = {
    # damaged files: Python and the JVM side must refuse them with the same one-line message
    "flipped_partition": lambda b: _flip(b / "partitions" / "p2.tflite", 1000),
    "truncated_partition": lambda b: (b / "partitions" / "p1.tflite").write_bytes(
        (b / "partitions" / "p1.tflite").read_bytes()[:4096]
    ),
    "grown_report": lambda b: (b / "report.txt").write_bytes(
        (b / "report.txt").read_bytes() + b"x"
    ),
    "missing_partition": lambda b: (b / "partitions" / "p3.tflite").unlink(),
    "missing_manifest": lambda b: (b / "manifest.json").unlink(),
    "flipped_plan": lambda b: _flip(b / "plan.json", 200),
    "manifest_version_2": _manifest_version,
    # consistent checksums, inconsistent plan: the cross-reference checks must catch these
    "plan_depends_on": lambda b: _edit_plan(b, _set("depends_on", [], 1)),
    "plan_op_unplaced": lambda b: _edit_plan(b, _drop_last_op),
    "plan_order": lambda b: _edit_plan(b, _swap_first_two),
    "plan_profile": lambda b: _edit_plan(b, _set("device_profile", "galaxy_s24_ultra")),
    "plan_version": lambda b: _edit_plan(b, _set("version", 3)),
    # schema violations: same JSON path and jsonschema wording
    "plan_unit_negative": lambda b: _edit_plan(b, _set("unit", -1, 1)),
    "plan_missing_delegate": lambda b: _edit_plan(b, _drop("delegate", 0)),
    "plan_bad_dtype": lambda b: _edit_plan(b, _set_input_dtype),
    "manifest_extra_key": _manifest_extra,
    "manifest_not_object": lambda b: (b / "manifest.json").write_text("[1, 2]\n"),
    "manifest_format": lambda b: (b / "manifest.json").write_text(
        (b / "manifest.json").read_text().replace('"edgepart-bundle"', '"tflite-bundle"')
    ),
}


def _split_field(key: str, value: Any, shard: int | None = None) -> Any:
    def fn(doc: dict[str, Any]) -> None:
        s = doc["splits"][0]
        (s if shard is None else s["shards"][shard])[key] = value

    return fn


def _collective_field(key: str, value: Any) -> Any:
    def fn(doc: dict[str, Any]) -> None:
        doc["collectives"][0][key] = value

    return fn


def _shard_in_first_partition(doc: dict[str, Any]) -> None:
    s = doc["splits"][0]
    s["shards"][1]["partition"] = s["shards"][0]["partition"]


# damage to a version-2 plan (tensor parallelism), applied to the split_convs bundle
SPLIT_CASES: dict[str, Any] = {
    "split_shard_partition": lambda b: _edit_plan(b, _shard_in_first_partition),
    "split_collective_kind": lambda b: _edit_plan(b, _collective_field("kind", "scatter")),
    "split_collective_split": lambda b: _edit_plan(b, _collective_field("split", "s9")),
    "split_reason": lambda b: _edit_plan(b, _split_field("reason", "taste")),
    "split_exact_type": lambda b: _edit_plan(b, _split_field("exact", "yes")),
    "split_collective_id": lambda b: _edit_plan(b, _split_field("collective", "c99")),
    "split_in_version_1": lambda b: _edit_plan(b, _set("version", 1)),
}


def corrupt_cases(src: Path, root: Path, split_src: Path) -> dict[str, dict[str, str]]:
    """Damaged copies of ``src`` (and paths that are no bundle) with Python's error for each."""
    paths = {}
    for cases, base in ((CASES, src), (SPLIT_CASES, split_src)):
        for name, damage in cases.items():
            dst = root / name
            shutil.copytree(base, dst)
            damage(dst)
            paths[name] = dst
    paths["no_such_dir"] = root / "does-not-exist"
    paths["model_file"] = root / "model.tflite"
    shutil.copyfile(src / "partitions" / "p0.tflite", paths["model_file"])
    cases = {}
    for name, path in paths.items():
        try:
            load_bundle(path)
        except BundleError as err:
            cases[name] = {"path": str(path), "message": str(err)}
        else:
            raise AssertionError(f"python loaded the damaged bundle {name}")
    return cases


def main(out: Path) -> int:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    sources = make_bundles(out / "bundles")
    index: dict[str, Any] = {"fixtures": [], "corrupt": {}}
    for name, src in sources.items():
        bdir = out / "bundles" / name
        bundle = load_bundle(bdir)
        exp = expected_routes(bundle.plan)
        exp["files"] = len(bundle.manifest["files"])
        exp["device_profile"] = bundle.manifest["device_profile"]
        exp["source_name"] = bundle.manifest["source_model"]["name"]
        exp["signature_key"] = bundle.plan.signature_key
        exp["trace"] = trace(name, bdir, src, out / "trace" / name)
        exp["source_in_bundle"] = (bdir / exp["source_name"]).is_file()
        (out / "expected").mkdir(exist_ok=True)
        (out / "expected" / f"{name}.json").write_text(json.dumps(exp, sort_keys=True, indent=1))
        index["fixtures"].append(name)
    index["corrupt"] = corrupt_cases(
        out / "bundles" / "mnv2_pixel8", out / "corrupt", out / "bundles" / "split_convs"
    )
    (out / "index.json").write_text(json.dumps(index, sort_keys=True, indent=1))
    print(f"wrote {len(index['fixtures'])} bundles and {len(index['corrupt'])} damaged copies")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: make_fixtures.py OUT_DIR", file=sys.stderr)
        sys.exit(2)
    try:
        sys.exit(main(Path(sys.argv[1])))
    except (BundleError, UsageError) as err:
        print(f"make_fixtures: error: {err}", file=sys.stderr)
        sys.exit(2)
