"""Command lines for TFLite's ``benchmark_model`` tool, built as argument lists.

Every flag name here was checked against the tool's sources (``benchmark_model.cc``,
``benchmark_tflite_model.cc`` and the delegate providers in ``tools/delegates/``). The tool parses
only the ``--name=value`` form, so that is the only form emitted. Unknown flags are not an error
for the tool: it prints ``Unconsumed cmdline flags: ...`` and carries on, which is why a binary
built without a delegate (Hexagon on a non-Qualcomm build, for instance) silently runs on CPU.
:func:`flags_from_help` reads ``--help`` output so callers can check support before running.

When flags appeared (approximate TensorFlow releases, from the upstream history):

=====================================================  ==========================================
flag                                                   since
=====================================================  ==========================================
``--use_gpu``, ``--use_nnapi``                         TF 1.14/2.0 (delegate registrar: TF 2.3)
``--enable_op_profiling``                              TF 2.1 (was a compile-time switch before)
``--use_hexagon``, ``--use_xnnpack``                   TF 2.2 / TF 2.3
``--external_delegate_path``                           TF 2.4
``--max_delegated_partitions``,
``--min_nodes_per_partition``                          TF 2.3 / TF 2.4
``--profiling_output_csv_file``                        TF 2.3 (deprecated by the two below)
``--op_profiling_output_mode``,
``--op_profiling_output_file``                         2024 (TF 2.17 / LiteRT)
``--export_model_runtime_info``,
``--model_runtime_info_output_file``                   2024 (TF 2.17 / LiteRT)
=====================================================  ==========================================
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from edgepart.errors import UsageError

__all__ = [
    "DELEGATE_KINDS",
    "BenchmarkOptions",
    "DelegateChoice",
    "build_command",
    "flags_from_help",
    "parse_delegate",
]

DELEGATE_KINDS = ("cpu", "xnnpack", "gpu", "nnapi", "hexagon", "external")
PROFILING_MODES = ("stdout", "csv", "proto")
_HEX_MASK = re.compile(r"^(0x)?[0-9a-fA-F]+$")
_OPTION_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class DelegateChoice:
    """One delegate selection: ``kind`` from :data:`DELEGATE_KINDS`, ``path`` for ``external``."""

    kind: str
    path: str | None = None

    def __str__(self) -> str:
        return f"external:{self.path}" if self.kind == "external" else self.kind


def parse_delegate(spec: str) -> DelegateChoice:
    """Parse ``cpu|xnnpack|gpu|nnapi|hexagon|external:PATH`` into a :class:`DelegateChoice`.

    Raises
    ------
    UsageError
        If the name is unknown or ``external:`` has no path.
    """
    text = spec.strip()
    if text.startswith("external:"):
        path = text[len("external:") :]
        if not path:
            raise UsageError(
                "--delegate external: needs a library path, e.g. external:/data/local/tmp/libd.so"
            )
        return DelegateChoice("external", path)
    if text not in DELEGATE_KINDS or text == "external":
        raise UsageError(
            f"unknown delegate {spec!r}: use one of cpu, xnnpack, gpu, nnapi, hexagon, "
            "external:PATH"
        )
    return DelegateChoice(text)


@dataclass(frozen=True)
class BenchmarkOptions:
    """Everything that goes on one ``benchmark_model`` command line.

    ``None`` means "leave the tool's default" and emits no flag. ``cpu_fallback_xnnpack=False``
    adds ``--use_xnnpack=false`` to a GPU/NNAPI/Hexagon/external run so that nodes the delegate
    rejects run on the builtin kernels rather than on the default XNNPACK delegate.
    """

    graph: str
    delegate: DelegateChoice = field(default_factory=lambda: DelegateChoice("xnnpack"))
    num_threads: int | None = None
    warmup_runs: int | None = None
    warmup_min_secs: float | None = None
    num_runs: int | None = None
    min_secs: float | None = None
    max_secs: float | None = None
    max_delegated_partitions: int | None = None
    min_nodes_per_partition: int | None = None
    op_profiling: bool = False
    op_profiling_mode: str = "stdout"
    op_profiling_output_file: str | None = None
    runtime_info_output_file: str | None = None
    report_peak_memory: bool = False
    require_full_delegation: bool = False
    cpu_fallback_xnnpack: bool | None = None
    gpu_backend: str | None = None
    gpu_precision_loss_allowed: bool | None = None
    nnapi_accelerator_name: str | None = None
    disable_nnapi_cpu: bool | None = None
    hexagon_lib_path: str | None = None
    external_delegate_options: Mapping[str, str] = field(default_factory=dict)
    cpu_mask: str | None = None
    result_file_path: str | None = None
    extra_flags: Sequence[str] = ()


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _num(value: float) -> str:
    # repr keeps floats exact and ints plain; benchmark_model parses both with strtof/strtol.
    return repr(value) if isinstance(value, float) else str(int(value))


def _check_positive(name: str, value: float | None, *, allow_zero: bool) -> None:
    if value is None:
        return
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise UsageError(f"{name} must be {bound}, got {value}")


def _delegate_flags(opts: BenchmarkOptions) -> list[str]:
    kind = opts.delegate.kind
    flags: list[str] = []
    if kind == "cpu":
        # Explicitly false selects BuiltinOpResolverWithoutDefaultDelegates: builtin kernels only.
        return ["--use_xnnpack=false"]
    if kind == "xnnpack":
        # Explicitly true disables the lazy default XNNPACK and applies it as a ranked delegate,
        # so the tool logs "Explicitly applied XNNPACK delegate ...".
        return ["--use_xnnpack=true"]
    if opts.cpu_fallback_xnnpack is False:
        flags.append("--use_xnnpack=false")
    if kind == "gpu":
        flags.append("--use_gpu=true")
        if opts.gpu_backend is not None:
            if opts.gpu_backend not in ("cl", "gl"):
                raise UsageError(f"gpu_backend must be 'cl' or 'gl', got {opts.gpu_backend!r}")
            flags.append(f"--gpu_backend={opts.gpu_backend}")
        if opts.gpu_precision_loss_allowed is not None:
            flags.append(f"--gpu_precision_loss_allowed={_bool(opts.gpu_precision_loss_allowed)}")
    elif kind == "nnapi":
        flags.append("--use_nnapi=true")
        if opts.nnapi_accelerator_name:
            flags.append(f"--nnapi_accelerator_name={opts.nnapi_accelerator_name}")
        if opts.disable_nnapi_cpu is not None:
            flags.append(f"--disable_nnapi_cpu={_bool(opts.disable_nnapi_cpu)}")
    elif kind == "hexagon":
        flags.append("--use_hexagon=true")
        if opts.hexagon_lib_path:
            flags.append(f"--hexagon_lib_path={opts.hexagon_lib_path}")
    elif kind == "external":
        flags.append(f"--external_delegate_path={opts.delegate.path}")
        if opts.external_delegate_options:
            items = []
            for key in sorted(opts.external_delegate_options):
                value = str(opts.external_delegate_options[key])
                if not _OPTION_KEY.match(key) or any(c in value for c in ";:"):
                    raise UsageError(
                        f"external delegate option {key!r}={value!r}: keys must be "
                        "[A-Za-z0-9_.-] and values may not contain ';' or ':' (the tool splits "
                        "on them)"
                    )
                items.append(f"{key}:{value}")
            flags.append("--external_delegate_options=" + ";".join(items))
    else:  # pragma: no cover - DelegateChoice is validated by parse_delegate
        raise UsageError(f"unknown delegate kind {kind!r}")
    return flags


def build_command(
    binary: str,
    opts: BenchmarkOptions,
    *,
    supported_flags: frozenset[str] | None = None,
) -> list[str]:
    """Return the argument list for one run: ``[taskset MASK] binary --graph=... ...``.

    Parameters
    ----------
    binary
        Path of ``benchmark_model`` (on the device for adb runs).
    opts
        The run's settings.
    supported_flags
        Flag names the binary accepts (from :func:`flags_from_help`). When given, per-op output
        in CSV mode falls back to the deprecated ``--profiling_output_csv_file`` on binaries that
        predate ``--op_profiling_output_mode``, and proto/runtime-info requests on such binaries
        raise instead of being silently ignored by the tool.

    Raises
    ------
    UsageError
        On out-of-range values, a bad CPU mask, or a flag the binary does not support.
    """
    if not opts.graph:
        raise UsageError("benchmark_model needs a model path (--graph)")
    for name in ("num_threads",):
        value = getattr(opts, name)
        if value is not None and value != -1 and value < 1:
            raise UsageError(f"{name} must be >= 1 (or -1 for the platform default), got {value}")
    for name in ("warmup_runs", "num_runs", "max_delegated_partitions", "min_nodes_per_partition"):
        _check_positive(name, getattr(opts, name), allow_zero=True)
    for name in ("warmup_min_secs", "min_secs", "max_secs"):
        _check_positive(name, getattr(opts, name), allow_zero=True)
    if opts.op_profiling_mode not in PROFILING_MODES:
        raise UsageError(
            f"op profiling mode {opts.op_profiling_mode!r} is not one of stdout, csv, proto"
        )

    def supports(flag: str) -> bool:
        return supported_flags is None or flag in supported_flags

    args: list[str] = []
    if opts.cpu_mask is not None:
        if not _HEX_MASK.match(opts.cpu_mask) or int(opts.cpu_mask, 16) == 0:
            raise UsageError(
                f"--cpu-mask {opts.cpu_mask!r} is not a non-zero hexadecimal CPU mask "
                "(e.g. f0 for cores 4-7)"
            )
        args += ["taskset", opts.cpu_mask.lower().removeprefix("0x")]
    args += [binary, f"--graph={opts.graph}"]
    numeric = (
        ("num_threads", opts.num_threads),
        ("warmup_runs", opts.warmup_runs),
        ("warmup_min_secs", opts.warmup_min_secs),
        ("num_runs", opts.num_runs),
        ("min_secs", opts.min_secs),
        ("max_secs", opts.max_secs),
        ("max_delegated_partitions", opts.max_delegated_partitions),
        ("min_nodes_per_partition", opts.min_nodes_per_partition),
    )
    args += [f"--{name}={_num(value)}" for name, value in numeric if value is not None]
    args += _delegate_flags(opts)
    if opts.require_full_delegation:
        args.append("--require_full_delegation=true")
    if opts.report_peak_memory:
        args.append("--report_peak_memory_footprint=true")
    if opts.op_profiling:
        args.append("--enable_op_profiling=true")
        mode, out = opts.op_profiling_mode, opts.op_profiling_output_file
        if mode == "proto" and out is None:
            raise UsageError("proto op profiling needs an output file (op_profiling_output_file)")
        if supports("op_profiling_output_mode"):
            if mode != "stdout":
                args.append(f"--op_profiling_output_mode={mode}")
            if out is not None:
                args.append(f"--op_profiling_output_file={out}")
        elif mode == "csv" and out is not None and supports("profiling_output_csv_file"):
            args.append(f"--profiling_output_csv_file={out}")
        elif mode != "stdout":
            raise UsageError(
                f"this benchmark_model has no --op_profiling_output_mode, so {mode} output is "
                "not available: use the stdout table or a newer binary"
            )
    if opts.runtime_info_output_file is not None:
        if not supports("export_model_runtime_info"):
            raise UsageError(
                "this benchmark_model has no --export_model_runtime_info (added in 2024): "
                "drop the runtime-info request or use a newer binary"
            )
        args += [
            "--export_model_runtime_info=true",
            f"--model_runtime_info_output_file={opts.runtime_info_output_file}",
        ]
    if opts.result_file_path is not None:
        args.append(f"--result_file_path={opts.result_file_path}")
    for extra in opts.extra_flags:
        if not extra.startswith("--") or "=" not in extra:
            raise UsageError(f"extra flag {extra!r} must look like --name=value")
        args.append(extra)
    return args


_HELP_FLAG = re.compile(r"--([A-Za-z0-9_]+)=")


def flags_from_help(help_text: str) -> frozenset[str]:
    """Return the flag names listed by ``benchmark_model --help`` (its usage text).

    Raises
    ------
    UsageError
        If the text lists no flags at all (not benchmark_model's usage output).
    """
    names = frozenset(_HELP_FLAG.findall(help_text))
    if "graph" not in names:
        raise UsageError(
            "the text is not benchmark_model's --help output (no --graph flag listed); run "
            "'benchmark_model --help' and pass its combined stdout and stderr"
        )
    return names
