#!/usr/bin/env python3
"""Host stand-in for TFLite's ``benchmark_model``, for tests that have no phone.

It accepts the real tool's ``--name=value`` flags (the ones ``edgepart.android.bm_flags`` emits
and a few more), runs the model with the REAL LiteRT interpreter
(``ai_edge_litert.interpreter.Interpreter``) and prints in benchmark_model's format: parameter
echo, delegate verdicts, the two ``Running benchmark ...`` stat lines (with ``p5= median= p95=``),
``Inference timings in us: ...``, the memory lines, per-op tables, CSV and the two protobuf files.

What it emulates, and how every number is obtained (nothing is invented):

* **Device.** An Android-like device with a CPU only. ``--use_gpu=true`` fails the way the real
  tool fails when OpenCL and OpenGL are unavailable (``Failed to apply GPU delegate.``, exit 1).
  ``--use_nnapi=true`` behaves as on a device whose only NNAPI device is the reference CPU (which
  ``--disable_nnapi_cpu`` forbids): ``Though NNAPI delegate is explicitly applied, the model graph
  will not be executed by the delegate.`` and the run continues on CPU. ``--use_hexagon=true``
  logs the Hexagon provider's ``Could not create Hexagon delegate ...`` warning and runs on CPU.
  ``--external_delegate_path=PATH`` really loads ``PATH`` with ``load_delegate``; a library that
  does not load gives the tool's ``Unable to load external delegate from : PATH (...)`` and a CPU
  run. Messages are the real tool's and runtime's wording (``benchmark_tflite_model.cc``,
  ``tools/delegates/*_provider.cc``, ``external_delegate.cc``).
* **CPU kernels.** ``--use_xnnpack=false`` uses ``BUILTIN_WITHOUT_DEFAULT_DELEGATES`` (builtin
  kernels, one node per op); otherwise the default XNNPACK delegate is applied (``AUTO``).
* **Init, first, warm-up and steady state.** ``time.perf_counter_ns`` around interpreter
  construction + delegate application + ``allocate_tensors()`` (init) and around each
  ``invoke()``; the warm-up/regular loops follow the tool's rule (``run < N or elapsed < min_secs``,
  stop past ``max_secs``). Statistics are computed the way ``StatWithPercentiles`` does.
* **Memory.** ``getrusage(RUSAGE_SELF).ru_maxrss`` deltas (the tool's ``GetMemoryUsage``), and with
  ``--report_peak_memory_footprint=true`` a thread polling ``/proc/self/statm``.
* **Per-op times (op profiling).** LiteRT's Python API has no per-op profiler, so each node of the
  execution plan is timed on its own: the stand-in extracts every node into its own ``.tflite``
  (an original op on CPU, or a whole delegate partition) with the flatbuffer object API that ships
  in ``ai_edge_litert.schema_py_generated``, feeds it the tensors that node saw in a full run
  (captured with ``experimental_preserve_all_tensors=True`` on builtin kernels) and times
  ``invoke()`` of that one-node model once per regular run, with the same kernels as the full run
  (builtin, or XNNPACK for a delegate partition). So each figure is a real measurement of that
  node's kernel on real inputs; it also contains LiteRT's fixed per-``invoke()`` cost (a few
  microseconds) and misses cross-node cache effects, which the real in-interpreter profiler would
  not. Which ops a DELEGATE node replaced is recovered from ``Interpreter._get_ops_details()``: a
  backward walk from the DELEGATE node's outputs through producers, stopping at its inputs. The
  execution-plan order and the ``yielding K partitions`` count come from the greedy
  node-subset partitioning TFLite uses (``graph_info.cc``), re-implemented below.
* Stand-in only: ``--fake_output_style=legacy`` prints the older layout (no ``INFO:`` prefixes,
  no percentiles, ``[start]`` column, ``Replacing N node(s)`` wording); ``--fake_seed`` seeds the
  random inputs. Op profiling supports single-subgraph models only.
"""

from __future__ import annotations

import copy
import ctypes
import math
import os
import resource
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

VALUE_FLAGS = {
    "graph": "",
    "num_threads": "-1",
    "warmup_runs": "1",
    "warmup_min_secs": "0.5",
    "num_runs": "50",
    "min_secs": "1.0",
    "max_secs": "150.0",
    "run_delay": "-1",
    "enable_op_profiling": "false",
    "op_profiling_output_mode": "stdout",
    "op_profiling_output_file": "",
    "profiling_output_csv_file": "",
    "export_model_runtime_info": "false",
    "model_runtime_info_output_file": "",
    "use_xnnpack": None,
    "use_gpu": "false",
    "use_nnapi": "false",
    "use_hexagon": "false",
    "external_delegate_path": "",
    "external_delegate_options": "",
    "max_delegated_partitions": "0",
    "min_nodes_per_partition": "0",
    "report_peak_memory_footprint": "false",
    "memory_footprint_check_interval_ms": "50",
    "require_full_delegation": "false",
    "verbose": "false",
    "help": "false",
    "gpu_backend": "",
    "gpu_precision_loss_allowed": "true",
    "nnapi_accelerator_name": "",
    "disable_nnapi_cpu": "true",
    "hexagon_lib_path": "/data/local/tmp",
    "xnnpack_force_fp16": "false",
    "result_file_path": "",
    "fake_output_style": "current",
    "fake_seed": "0",
}

# The tool echoes set parameters with these labels (LOG_BENCHMARK_PARAM / LOG_TOOL_PARAM).
DISPLAY = {
    "num_runs": "Min num runs",
    "min_secs": "Min runs duration (seconds)",
    "max_secs": "Max runs duration (seconds)",
    "num_threads": "Num threads",
    "warmup_runs": "Min warmup runs",
    "warmup_min_secs": "Min warmup runs duration (seconds)",
    "graph": "Graph",
    "enable_op_profiling": "Enable op profiling",
    "op_profiling_output_mode": "Op profiling output mode.",
    "op_profiling_output_file": "Op profiling output file.",
    "export_model_runtime_info": "Enable Model Runtime Info Export",
    "model_runtime_info_output_file": "Proto File to export model runtime info to",
    "max_delegated_partitions": "Max number of delegated partitions",
    "min_nodes_per_partition": "Min nodes per partition",
    "use_gpu": "Use gpu",
    "use_nnapi": "Use NNAPI",
    "use_xnnpack": "Use xnnpack",
    "use_hexagon": "Use Hexagon",
    "external_delegate_path": "External delegate path",
    "report_peak_memory_footprint": "Report the peak memory footprint",
}

LEGACY = False


def info(msg: str) -> None:
    print(msg if LEGACY else f"INFO: {msg}", flush=True)


def warn(msg: str) -> None:
    print(msg if LEGACY else f"WARN: {msg}", flush=True)


def error(msg: str) -> None:
    print(f"ERROR: {msg}", file=sys.stderr, flush=True)


def g(x: float) -> str:
    """C++ ``ostream << double`` default formatting (6 significant digits)."""
    return f"{x:g}"


def as_bool(v: str) -> bool:
    return v.lower() in ("true", "1")


def parse_args(argv: Sequence[str]) -> tuple[dict[str, str], list[str], list[str]]:
    params, unknown, order = {}, [], []
    for arg in argv:
        if arg == "--help":
            params["help"] = "true"
            continue
        name, eq, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if not eq or name not in VALUE_FLAGS:
            unknown.append(arg)
            continue
        params[name] = value
        order.append(name)
    return params, unknown, order


# ----------------------------------------------------------------------------------- statistics


class Stat:
    def __init__(self) -> None:
        self.values: list[int] = []

    def add(self, v: int) -> None:
        self.values.append(int(v))

    @property
    def count(self) -> int:
        return len(self.values)

    def avg(self) -> float:
        return sum(self.values) / len(self.values)

    def std(self) -> int:
        v = self.values
        if len(v) == 0 or min(v) == max(v):
            return 0
        var = int(sum(x * x for x in v) / len(v) - self.avg() ** 2)  # int64 like the tool
        return int(math.sqrt(var)) if var > 0 else 0

    def percentile(self, p: int) -> int:
        vals = sorted(self.values)
        return vals[len(vals) * p // 100] if p < 100 else vals[-1]

    def line(self, percentiles: bool) -> str:
        v = self.values
        if not v:
            out = "count=0"
        elif min(v) == max(v):
            out = f"count={len(v)} curr={v[-1]}" + ("(all same)" if len(v) > 1 else "")
        else:
            out = (
                f"count={len(v)} first={v[0]} curr={v[-1]} min={min(v)} max={max(v)} "
                f"avg={g(self.avg())} std={self.std()}"
            )
        if percentiles and v:
            out += (
                f" p5={self.percentile(5)} median={self.percentile(50)} p95={self.percentile(95)}"
            )
        return out


# ------------------------------------------------------------------------------- model handling


def load_model_t(data: bytes) -> Any:
    from ai_edge_litert import schema_py_generated as schema

    return schema.ModelT.InitFromPackedBuf(bytearray(data), 0)


def op_name(model_t: Any, op: Any) -> str:
    from ai_edge_litert import schema_py_generated as schema

    code = model_t.operatorCodes[op.opcodeIndex]
    builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    if builtin == schema.BuiltinOperator.CUSTOM:
        return code.customCode.decode() if isinstance(code.customCode, bytes) else code.customCode
    return names[builtin]


def is_constant(model_t: Any, tensor_index: int) -> bool:
    sg = model_t.subgraphs[0]
    buf = model_t.buffers[sg.tensors[tensor_index].buffer]
    return buf is not None and buf.data is not None and len(buf.data) > 0


def extract(
    model_t: Any, op_ids: Sequence[int], inputs: Sequence[int], outputs: Sequence[int]
) -> bytes:
    """One-subgraph ``.tflite`` holding ops ``op_ids`` with the given boundary tensors."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    sg = model_t.subgraphs[0]
    used: set[int] = set(inputs) | set(outputs)
    for i in op_ids:
        op = sg.operators[i]
        used |= {t for t in list(op.inputs) + list(op.outputs) if t >= 0}
        if op.intermediates is not None:
            used |= {t for t in op.intermediates if t >= 0}
    tmap = {old: new for new, old in enumerate(sorted(used))}
    bmap: dict[int, int] = {}
    buffers = [schema.BufferT()]
    tensors = []
    for old in sorted(used):
        t = copy.copy(sg.tensors[old])
        if is_constant(model_t, old):
            bmap.setdefault(t.buffer, len(buffers))
            if bmap[t.buffer] == len(buffers):
                buffers.append(model_t.buffers[t.buffer])
            t.buffer = bmap[t.buffer]
        else:
            t.buffer = 0
        tensors.append(t)
    ops = []
    for i in op_ids:
        op = copy.copy(sg.operators[i])
        op.inputs = [tmap[t] if t >= 0 else -1 for t in sg.operators[i].inputs]
        op.outputs = [tmap[t] for t in sg.operators[i].outputs]
        if op.intermediates is not None:
            op.intermediates = [tmap[t] for t in op.intermediates]
        ops.append(op)
    new_sg = schema.SubGraphT()
    new_sg.tensors, new_sg.operators = tensors, ops
    new_sg.inputs = [tmap[t] for t in inputs]
    new_sg.outputs = [tmap[t] for t in outputs]
    new_sg.name = sg.name
    m = schema.ModelT()
    m.version, m.operatorCodes, m.subgraphs, m.buffers = 3, model_t.operatorCodes, [new_sg], buffers
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def partition_plan(
    ops_io: Sequence[tuple[list[int], list[int]]], delegated: dict[int, int], const: set[int]
) -> list[tuple[str, list[int]]]:
    """TFLite's greedy node-subset partitioning; returns ``[(kind, node ids)]`` in plan order.

    ``kind`` is ``cpu`` or ``d<k>`` (delegate partition k). Re-implements
    ``PartitionGraphIntoIndependentNodeSubsets`` (greedy, no control edges).
    """
    producer = {t: i for i, (_, outs) in enumerate(ops_io) for t in outs}
    ready = {t for ins, _ in ops_io for t in ins if t not in producer or t in const}
    assigned: set[int] = set()
    subsets: list[tuple[str, list[int]]] = []
    n = len(ops_io)
    while len(assigned) < n:
        kind: str | None = None
        members: list[int] = []
        changed = True
        while changed:
            changed = False
            for i in range(n):
                if i in assigned:
                    continue
                ins, outs = ops_io[i]
                if not all(t < 0 or t in ready for t in ins):
                    continue
                k = f"d{delegated[i]}" if i in delegated else "cpu"
                if kind is None:
                    kind = k
                if k != kind:
                    continue
                assigned.add(i)
                members.append(i)
                new_ready = set(outs)
                ready |= new_ready
                changed = True
        if kind is None:
            raise RuntimeError("graph has a cycle or an op whose inputs are never produced")
        subsets.append((kind, members))
    return subsets


# --------------------------------------------------------------------------------- the tool


def main(argv: Sequence[str]) -> int:
    global LEGACY
    params, unknown, order = parse_args(argv)
    LEGACY = params.get("fake_output_style", "current") == "legacy"
    P = {k: params.get(k, v) for k, v in VALUE_FLAGS.items()}
    info("STARTING!")
    if os.environ.get("ADB_EMULATOR_FAULT_PENDING"):
        # the emulated device will unplug or freeze this run; stay alive until it does
        time.sleep(5.0)
    if as_bool(P["help"]):
        usage = "usage: benchmark_model\nFlags:\n" + "".join(
            f"\t--{k}={'' if v is None else v}\t\n"
            for k, v in VALUE_FLAGS.items()
            if not k.startswith("fake_")
        )
        error(usage)
        error("Benchmarking failed.")
        return 1
    if unknown:
        warn("Unconsumed cmdline flags: " + " ".join(unknown))
    info("Log parameter values verbosely: [0]")
    for name in order:
        if name in DISPLAY:
            value = params[name]
            if VALUE_FLAGS[name] in ("true", "false") or name == "use_xnnpack":
                value = "1" if as_bool(value) else "0"
            info(f"{DISPLAY[name]}: [{value}]")
    graph = P["graph"]
    if not graph:
        error("Please specify the name of your TF Lite input file with --graph")
        error("Benchmarking failed.")
        return 1
    if not os.path.isfile(graph):
        error(f"Could not open '{graph}'.")
        error(f"Failed to load model {graph}")
        error("Benchmarking failed.")
        return 1
    with open(graph, "rb") as fh:
        data = fh.read()

    from ai_edge_litert import interpreter as litert

    rng = np.random.default_rng(int(P["fake_seed"]))
    threads = int(P["num_threads"])
    builtin_only = P["use_xnnpack"] is not None and not as_bool(P["use_xnnpack"])
    resolver = (
        litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        if builtin_only
        else litert.OpResolverType.AUTO
    )
    mem0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak = {"kb": 0}
    stop = threading.Event()
    if as_bool(P["report_peak_memory_footprint"]):
        page = os.sysconf("SC_PAGE_SIZE")
        interval = max(int(P["memory_footprint_check_interval_ms"]), 1) / 1000.0

        def poll() -> None:
            while not stop.is_set():
                with open("/proc/self/statm") as f:
                    rss = int(f.read().split()[1]) * page // 1024
                peak["kb"] = max(peak["kb"], rss)
                stop.wait(interval)

        threading.Thread(target=poll, daemon=True).start()

    t0 = time.perf_counter_ns()
    try:
        model_t = load_model_t(data)
    except Exception:
        error(f"Failed to load model {graph}")
        error("Benchmarking failed.")
        return 1
    info(f"Loaded model {graph}")
    delegates: list[Any] = []
    provider: str | None = None
    if as_bool(P["use_gpu"]):
        info("Created TensorFlow Lite delegate for GPU.")
        info("GPU delegate created.")
        error(
            "Can not open OpenCL library on this device - dlopen failed: library "
            '"libOpenCL.so" not found'
        )
        error("Falling back to OpenGL")
        error("TfLiteGpuDelegate Prepare: delegate is not initialized")
        error(
            f"Node number {len(model_t.subgraphs[0].operators)} (TfLiteGpuDelegateV2) "
            "failed to prepare."
        )
        error("Restored original execution plan after delegate application failure.")
        error("Failed to apply GPU delegate.")
        error("Benchmarking failed.")
        return 1
    if as_bool(P["use_nnapi"]):
        info("Created TensorFlow Lite delegate for NNAPI.")
        info("NNAPI delegate created.")
        provider = "NNAPI"
    if as_bool(P["use_hexagon"]):
        warn(
            "Could not create Hexagon delegate: platform may not support delegate or required "
            "libraries are missing"
        )
    if P["external_delegate_path"]:
        path = P["external_delegate_path"]
        opts = dict(
            kv.split(":", 1) for kv in P["external_delegate_options"].split(";") if ":" in kv
        )
        try:
            ctypes.CDLL(path)
            delegates.append(litert.load_delegate(path, opts))
            info("EXTERNAL delegate created.")
            provider = "EXTERNAL"
        except (OSError, ValueError) as exc:
            print(
                f"INFO: Unable to load external delegate from : {path} ({exc})",
                file=sys.stderr,
                flush=True,
            )
    if P["use_xnnpack"] is not None and as_bool(P["use_xnnpack"]):
        info("XNNPACK delegate created.")
        provider = provider or "XNNPACK"
    try:
        interp = litert.Interpreter(
            model_content=data,
            num_threads=None if threads < 1 else threads,
            experimental_op_resolver_type=resolver,
            experimental_delegates=delegates or None,
        )
        a0 = time.perf_counter_ns()
        interp.allocate_tensors()
        alloc_us = (time.perf_counter_ns() - a0) // 1000
    except (ValueError, RuntimeError) as exc:
        error(str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc))
        error("Failed to allocate tensors!")
        error("Benchmarking failed.")
        return 1
    init_us = (time.perf_counter_ns() - t0) // 1000
    mem_init = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - mem0

    sg = model_t.subgraphs[0]
    n_ops = len(sg.operators)
    details = interp._get_ops_details()
    delegate_nodes = [d for d in details if d["op_name"] == "DELEGATE"]
    const = {i for i in range(len(sg.tensors)) if is_constant(model_t, i)}
    producer = {t: i for i, op in enumerate(sg.operators) for t in op.outputs}
    delegated: dict[int, int] = {}
    for k, d in enumerate(delegate_nodes):
        stop_at = set(int(t) for t in d["inputs"])
        todo = [int(t) for t in d["outputs"]]
        while todo:
            t = todo.pop()
            i = producer.get(t)
            if i is None or i in delegated or t in stop_at:
                continue
            delegated[i] = k
            todo += [x for x in sg.operators[i].inputs if x >= 0 and x not in stop_at]
    ops_io = [([t for t in op.inputs if t >= 0], list(op.outputs)) for op in sg.operators]
    plan = partition_plan(ops_io, delegated, const)
    kernel = "TfLiteXNNPackDelegate" if not delegates else "DELEGATE"
    if delegate_nodes:
        if LEGACY:
            print(
                f"INFO: Replacing {len(delegated)} node(s) with delegate ({kernel}) node, "
                f"yielding {len(plan)} partitions.",
                file=sys.stderr,
                flush=True,
            )
        else:
            name = sg.name.decode() if isinstance(sg.name, bytes) else (sg.name or "")
            print(
                f"VERBOSE: Replacing {len(delegated)} out of {n_ops} node(s) with delegate "
                f"({kernel}) node, yielding {len(plan)} partitions for subgraph 0 ({name}).",
                file=sys.stderr,
                flush=True,
            )
    if provider is not None:
        if provider == "NNAPI" or not delegate_nodes:
            info(
                f"Though {provider} delegate is explicitly applied, the model graph will not "
                "be executed by the delegate."
            )
        elif len(plan) == 1:
            info(
                f"Explicitly applied {provider} delegate, and the model graph will be "
                "completely executed by the delegate."
            )
        else:
            info(
                f"Explicitly applied {provider} delegate, and the model graph will be partially"
                f" executed by the delegate w/ {len(delegate_nodes)} delegate kernels."
            )
    if as_bool(P["require_full_delegation"]) and not (delegate_nodes and len(plan) == 1):
        error("Disallowed CPU fallback detected.")
        error("Benchmarking failed.")
        return 1
    info(f"The input model file size (MB): {g(len(data) / 1e6)}")
    info(f"Initialized session in {g(init_us / 1e3)}ms.")

    feed = []
    for d in interp.get_input_details():
        shape, dtype = d["shape"], d["dtype"]
        if np.issubdtype(dtype, np.floating):
            feed.append(rng.uniform(-0.5, 0.5, shape).astype(dtype))
        elif dtype == np.bool_:
            feed.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            info_ = np.iinfo(dtype)
            feed.append(
                rng.integers(max(info_.min, -128), min(info_.max, 127) + 1, shape).astype(dtype)
            )

    def run_once() -> int:
        for d, x in zip(interp.get_input_details(), feed, strict=True):
            interp.set_tensor(d["index"], x)
        s = time.perf_counter_ns()
        interp.invoke()
        return (time.perf_counter_ns() - s) // 1000

    units: list[dict[str, Any]] = []
    profiling = as_bool(P["enable_op_profiling"])
    if profiling:
        if len(model_t.subgraphs) > 1:
            error(
                "fake benchmark_model: op profiling of multi-subgraph models is not "
                "implemented by this stand-in"
            )
            error("Benchmarking failed.")
            return 1
        units = build_units(
            litert, model_t, data, plan, delegate_nodes, resolver, threads, feed, interp
        )

    def loop(n: int, min_secs: float, max_secs: float, label_unit: bool) -> Stat:
        info(
            f"Running benchmark for at least {n} iterations and at least {g(min_secs)} seconds "
            f"but terminate if exceeding {g(max_secs)} seconds."
        )
        st = Stat()
        start = time.perf_counter()
        run = 0
        while (
            run < n or time.perf_counter() - start < min_secs
        ) and time.perf_counter() - start <= max_secs:
            st.add(run_once())
            if label_unit:
                for u in units:
                    u["stat"].add(u["time"]())
            run += 1
        info(st.line(percentiles=not LEGACY) + "\n")
        return st

    warm = loop(int(P["warmup_runs"]), float(P["warmup_min_secs"]), float(P["max_secs"]), False)
    regular = loop(int(P["num_runs"]), float(P["min_secs"]), float(P["max_secs"]), profiling)
    mem_all = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - mem0
    stop.set()
    info(
        f"Inference timings in us: Init: {init_us}, First inference: {warm.values[0]}, "
        f"Warmup (avg): {g(warm.avg())}, Inference (avg): {g(regular.avg())}"
    )
    info(
        "Note: as the benchmark tool itself affects memory footprint, the following is only "
        "APPROXIMATE to the actual memory footprint of the model at runtime. Take the "
        "information at your discretion."
    )
    info(
        f"Memory footprint delta from the start of the tool (MB): init={g(mem_init / 1024.0)} "
        f"overall={g(mem_all / 1024.0)}"
    )
    if peak["kb"]:
        info(f"Overall peak memory footprint (MB) via periodic monitoring: {g(peak['kb'] / 1024)}")
    if profiling:
        emit_profile(P, units, alloc_us, sg)
    if as_bool(P["export_model_runtime_info"]):
        write_runtime_info(
            P["model_runtime_info_output_file"],
            model_t,
            interp,
            details,
            delegate_nodes,
            delegated,
            plan,
            kernel,
        )
    return 0


def build_units(
    litert: Any,
    model_t: Any,
    data: bytes,
    plan: list[tuple[str, list[int]]],
    delegate_nodes: list[dict[str, Any]],
    resolver: Any,
    threads: int,
    feed: list[np.ndarray],
    interp: Any,
) -> list[dict[str, Any]]:
    """One timed single-node model per execution-plan node, fed with captured real tensors."""
    capture = litert.Interpreter(
        model_content=data,
        experimental_preserve_all_tensors=True,
        experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
    )
    capture.allocate_tensors()
    for d, x in zip(capture.get_input_details(), feed, strict=True):
        capture.set_tensor(d["index"], x)
    capture.invoke()
    sg = model_t.subgraphs[0]
    consumers: dict[int, set[int]] = {}
    for i, op in enumerate(sg.operators):
        for t in op.inputs:
            consumers.setdefault(t, set()).add(i)
    model_outputs = set(sg.outputs)
    const = {i for i in range(len(sg.tensors)) if is_constant(model_t, i)}
    units = []
    for kind, members in plan:
        nodes = [[i] for i in members] if kind == "cpu" else [members]
        for ids in nodes:
            inside = set(ids)
            produced = {t for i in ids for t in sg.operators[i].outputs}
            ins = sorted(
                {
                    t
                    for i in ids
                    for t in sg.operators[i].inputs
                    if t >= 0 and t not in produced and t not in const
                }
            )
            outs = sorted(
                t for t in produced if t in model_outputs or consumers.get(t, set()) - inside
            ) or sorted(produced)
            sub = litert.Interpreter(
                model_content=extract(model_t, ids, ins, outs),
                num_threads=None if threads < 1 else threads,
                experimental_op_resolver_type=resolver
                if kind != "cpu"
                else litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
            )
            sub.allocate_tensors()
            for d, t in zip(sub.get_input_details(), ins, strict=True):
                sub.set_tensor(d["index"], capture.get_tensor(t))

            def timer(s: Any = sub) -> int:
                b = time.perf_counter_ns()
                s.invoke()
                return (time.perf_counter_ns() - b) // 1000

            names = (
                [sg.tensors[t].name for t in sg.operators[ids[-1]].outputs]
                if kind == "cpu"
                else [sg.tensors[t].name for t in outs]
            )
            names = [n.decode() if isinstance(n, bytes) else n for n in names]
            if kind == "cpu":
                node, ntype = ids[0], op_name(model_t, sg.operators[ids[0]])
            else:
                dn = delegate_nodes[int(kind[1:])]
                node = dn["index"]
                ntype = "TfLiteXNNPackDelegate"
            units.append(
                {
                    "node": node,
                    "type": ntype,
                    "name": "[" + ", ".join(names) + "]:" + str(node),
                    "time": timer,
                    "stat": Stat(),
                }
            )
    return units


def table_rows(units: list[dict[str, Any]], legacy: bool) -> tuple[list[tuple[Any, ...]], int]:
    total = sum(sum(u["stat"].values) for u in units)
    rows, cdf, start = [], 0.0, 0.0
    for u in units:
        st = u["stat"]
        pct = sum(st.values) * 100.0 / total if total else float("nan")
        cdf += pct
        rows.append((u, st.values[0] / 1000.0, st.avg() / 1000.0, pct, cdf, start))
        start += st.avg() / 1000.0
    return rows, total


def field(width: int, value: Any) -> str:
    text = f"{value:.3f}" if isinstance(value, float) else str(value)
    return "\t" + text.rjust(width)


def emit_profile(P: dict[str, str], units: list[dict[str, Any]], alloc_us: int, sg: Any) -> None:
    mode = P["op_profiling_output_mode"]
    out_file = P["op_profiling_output_file"]
    if P["profiling_output_csv_file"]:
        mode, out_file = "csv", P["profiling_output_csv_file"]
    if mode == "proto":
        write_profile_proto(out_file, units, alloc_us, sg)
        return
    csv = mode == "csv"
    init_unit = {"type": "AllocateTensors", "name": "AllocateTensors/0", "stat": Stat()}
    init_unit["stat"].add(alloc_us)
    text = (
        "Profiling Info for Benchmark Initialization:\n"
        + block([init_unit], csv, False)
        + "\nOperator-wise Profiling Info for Regular Benchmark Runs:\n"
        + block(units, csv, True)
        + "\n"
    )
    if out_file:
        with open(out_file, "w") as f:
            f.write(text)
    else:
        print(text if LEGACY else "INFO: " + text, end="", flush=True)


def block(units: list[dict[str, Any]], csv: bool, full: bool) -> str:
    """One stats-calculator report, formatted like ``StatsCalculator::GetOutputString``."""
    runs = units[0]["stat"].count if units else 0
    lines: list[str] = []

    def header(title: str) -> None:
        lines.append(f"============================== {title} ==============================")
        if csv:
            lines.append(
                "node type, "
                + ("start, " if LEGACY else "")
                + "first, avg_ms, %, cdf%, mem KB, times called, name"
            )
        else:
            cols = (
                field(40, "[node type]")
                + (field(17, "[start]") if LEGACY else "")
                + field(9, "[first]")
                + field(9, "[avg ms]")
                + field(8, "[%]")
                + field(8, "[cdf%]")
                + field(10, "[mem KB]")
                + field(9, "[times called]")
            )
            lines.append(cols + "\t[Name]")

    def row(
        u: dict[str, Any], first: float, avg: float, pct: float, cdf: float, start: float
    ) -> None:
        if csv:
            name = u["name"].replace(",", "\t")
            lead = f"{u['type']}, " + (f"{g(start)}, " if LEGACY else "")
            lines.append(f"{lead}{g(first)}, {g(avg)}, {g(pct)}%, {g(cdf)}%, 0, 1, {name}")
        else:
            lines.append(
                field(40, u["type"])
                + (field(17, start) if LEGACY else "")
                + field(9, first)
                + field(9, avg)
                + field(7, pct)
                + "%"
                + field(7, cdf)
                + "%"
                + field(10, 0.0)
                + field(9, 1)
                + "\t"
                + u["name"]
            )

    rows, _ = table_rows(units, LEGACY)
    header("Run Order")
    for r in rows:
        row(*r)
    lines.append("")
    header("Top by Computation Time")
    cdf = 0.0
    for r in sorted(rows, key=lambda r: -r[2])[:10]:
        cdf += r[3]
        row(r[0], r[1], r[2], r[3], cdf, r[5])
    lines.append("")
    lines.append(f"Number of nodes executed: {len(units)}")
    lines.append(
        "============================== Summary by node type =============================="
    )
    by_type: dict[str, list[int]] = {}
    for u in units:
        agg = by_type.setdefault(u["type"], [0, 0])
        agg[0] += 1
        agg[1] += int(sum(u["stat"].values) / runs)
    acc = sum(v[1] for v in by_type.values())
    if csv:
        lines.append("node type, count, avg_ms, avg %, cdf %, mem KB, times called")
    else:
        lines.append(
            field(40, "[Node type]")
            + field(9, "[count]")
            + field(10, "[avg ms]")
            + field(11, "[avg %]")
            + field(11, "[cdf %]")
            + field(10, "[mem KB]")
            + field(10, "[times called]")
        )
    cdf = 0.0
    for t, (count, us) in sorted(by_type.items(), key=lambda kv: (-kv[1][1], kv[0])):
        pct = us / acc * 100.0 if acc else float("nan")
        cdf += pct
        if csv:
            lines.append(f"{t}, {count}, {g(us / 1000.0)}, {g(pct)}%, {g(cdf)}%, 0, {count}")
        else:
            lines.append(
                field(40, t)
                + field(9, count)
                + field(10, us / 1000.0)
                + field(10, pct)
                + "%"
                + field(10, cdf)
                + "%"
                + field(10, 0.0)
                + field(9, count)
            )
    lines.append("")
    totals = Stat()
    for k in range(runs):
        totals.add(sum(u["stat"].values[k] for u in units))
    lines.append("Timings (microseconds): " + totals.line(percentiles=False))
    lines.append("Memory (bytes): count=0")
    lines.append(f"{len(units)} nodes observed")
    lines.append("")
    return "\n".join(lines) + "\n"


def write_profile_proto(path: str, units: list[dict[str, Any]], alloc_us: int, sg: Any) -> None:
    from ai_edge_litert import profiling_info_pb2 as pb

    msg = pb.BenchmarkProfilingData()
    name = sg.name.decode() if isinstance(sg.name, bytes) else (sg.name or "")

    def fill(op: Any, ntype: str, oname: str, values: list[int], order: int) -> None:
        st = Stat()
        for v in values:
            st.add(v)
        op.node_type, op.name, op.run_order, op.times_called = ntype, oname, order, 1
        s = op.inference_microseconds
        s.first, s.last, s.avg = values[0], values[-1], int(st.avg())
        s.min, s.max, s.sum, s.count = min(values), max(values), sum(values), len(values)
        mean = st.avg()
        var = sum((v - mean) ** 2 for v in values) / len(values)
        s.variance, s.stddev = var, math.sqrt(var)
        op.mem_kb.count = len(values)

    init_sg = msg.init_profile.subgraph_profiles.add()
    init_sg.subgraph_index, init_sg.subgraph_name = 0, name
    fill(init_sg.per_op_profiles.add(), "AllocateTensors", "AllocateTensors/0", [alloc_us], 0)
    run_sg = msg.runtime_profile.subgraph_profiles.add()
    run_sg.subgraph_index, run_sg.subgraph_name = 0, name
    for order, u in enumerate(units):
        fill(run_sg.per_op_profiles.add(), u["type"], u["name"], u["stat"].values, order)
    with open(path, "wb") as f:
        f.write(msg.SerializeToString())


_TFLITE_TYPE = {
    np.float32: 1,
    np.int32: 2,
    np.uint8: 3,
    np.int64: 4,
    np.bool_: 6,
    np.int16: 7,
    np.int8: 9,
    np.float16: 10,
    np.float64: 11,
}


def write_runtime_info(
    path: str,
    model_t: Any,
    interp: Any,
    details: list[dict[str, Any]],
    delegate_nodes: list[dict[str, Any]],
    delegated: dict[int, int],
    plan: list[tuple[str, list[int]]],
    kernel: str,
) -> None:
    from ai_edge_litert import model_runtime_info_pb2 as pb

    sg = model_t.subgraphs[0]
    msg = pb.ModelRuntimeDetails()
    rs = msg.subgraphs.add()
    rs.subgraph_id, rs.subgraph_type = 0, pb.RuntimeSubgraph.TFLITE_SUBGRAPH
    rs.name = sg.name.decode() if isinstance(sg.name, bytes) else (sg.name or "")
    for t in interp.get_tensor_details():
        e = rs.edges.add()
        e.id, e.name = t["index"], t["name"]
        e.data_type = _TFLITE_TYPE.get(np.dtype(t["dtype"]).type, 0)
        e.shape.extend(int(x) for x in t["shape"])
        # kernels add scratch tensors past the model's own (e.g. CONV_2D's im2col)
        e.allocation_type = (
            "kTfLiteMmapRo"
            if t["index"] < len(sg.tensors) and is_constant(model_t, t["index"])
            else "kTfLiteArenaRw"
        )
        e.size = int(np.prod(t["shape"])) * np.dtype(t["dtype"]).itemsize
    for i, op in enumerate(sg.operators):
        n = rs.nodes.add()
        n.id, n.name = i, op_name(model_t, op)
        code = model_t.operatorCodes[op.opcodeIndex]
        n.type = str(max(code.builtinCode, code.deprecatedBuiltinCode))
        n.inputs.extend(op.inputs)
        n.outputs.extend(op.outputs)
        if i in delegated:
            n.delegated_to_node_id = delegate_nodes[delegated[i]]["index"]
    for k, d in enumerate(delegate_nodes):
        n = rs.nodes.add()
        n.id, n.name, n.type = d["index"], kernel, kernel
        n.inputs.extend(int(x) for x in d["inputs"])
        n.outputs.extend(int(x) for x in d["outputs"])
        n.delegate_node_details.delegate_name = kernel
        n.delegate_node_details.tflite_node_ids_replaced.extend(
            sorted(i for i, p in delegated.items() if p == k)
        )
    for kind, members in plan:
        if kind == "cpu":
            rs.execution_plan.extend(members)
        else:
            rs.execution_plan.append(delegate_nodes[int(kind[1:])]["index"])
    with open(path, "wb") as f:
        f.write(msg.SerializeToString())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
