"""Command lines for TFLite's ``benchmark_model`` tool, built as argument lists.

Every flag name here was checked against the tool's sources (``benchmark_model.cc``,
``benchmark_tflite_model.cc`` and the delegate providers in ``tools/delegates/``). The tool parses
only the ``--name=value`` form, so that is the only form emitted. Unknown flags are not an error
for the tool: it prints ``Unconsumed cmdline flags: ...`` and carries on, which is why a binary
built without a delegate (Hexagon on a non-Qualcomm build, for instance) silently runs on CPU.
:func:`flags_from_help` reads ``--help`` output so callers can check support before running.

The flags that apply a delegate, the provider name the tool logs when it does, and the tool
flags that configure it come from the delegate's file (``delegates/NAME.yaml``, key
``benchmark_model``): ``--delegate gpu`` is whatever ``gpu.yaml`` says, and a new delegate needs
no change here. ``external:PATH`` is the tool's own external-delegate provider.

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

from edgepart.devices.delegate import (
    LIBRARY_PLACEHOLDER,
    BenchmarkFlags,
    DelegateSpec,
    delegate_names,
    load_delegate,
)
from edgepart.devices.search_path import find
from edgepart.errors import BenchmarkOutputError, UsageError

__all__ = [
    "EXTERNAL",
    "BenchmarkOptions",
    "DelegateChoice",
    "ToolDelegate",
    "build_command",
    "delegate_help",
    "flags_from_help",
    "parse_delegate",
    "tool_delegate",
]

EXTERNAL = "external"
"""``external:PATH``: the tool's own external-delegate provider, for a library given by path."""
_EXTERNAL_FLAGS = BenchmarkFlags(
    (f"--external_delegate_path={LIBRARY_PLACEHOLDER}",), "EXTERNAL", (), EXTERNAL
)  # external_delegate_provider.cc: GetName() is "EXTERNAL"
PROFILING_MODES = ("stdout", "csv", "proto")
_HEX_MASK = re.compile(r"^(0x)?[0-9a-fA-F]+$")
_OPTION_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class DelegateChoice:
    """One delegate selection for ``benchmark_model``.

    ``kind`` is a delegate's name or its ``benchmark_model.label`` (``cpu`` for ``cpu_builtin``)
    from the delegate files, or ``external``; ``path`` is the library's path on the device
    (required for ``external`` and for delegates the tool loads as external libraries);
    ``options`` are external delegate options (``--external_delegate_options``).
    """

    kind: str
    path: str | None = None
    options: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return f"{self.kind}:{self.path}" if self.path else self.kind


@dataclass(frozen=True)
class ToolDelegate:
    """What the tool needs for a :class:`DelegateChoice`, from its delegate file.

    ``flags`` apply it (with the device path filled in); ``provider`` is the name the tool logs
    when it applies it (None for a CPU kernel set, which it never reports); ``host_executor``
    names that kernel set (``xnnpack``, ``builtin``); ``option_flags`` are the tool flags that
    configure it.
    """

    label: str
    flags: tuple[str, ...]
    provider: str | None
    option_flags: frozenset[str] = frozenset()
    host_executor: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def flag_names(self) -> tuple[str, ...]:
        """The flags the binary must know (``use_gpu`` for ``--use_gpu=true``)."""
        return tuple(f[2:].split("=", 1)[0] for f in self.flags)


def bench_spec(name: str) -> DelegateSpec | None:
    """The delegate file for ``name``: a delegate's name, else the file whose label it is."""
    if find("delegates", name) is not None:
        spec = load_delegate(name)
        return spec if spec.benchmark_model is not None else None
    for n in delegate_names():
        spec = load_delegate(n)
        if spec.benchmark_model is not None and spec.benchmark_model.label == name:
            return spec
    return None


def tool_delegate(choice: DelegateChoice) -> ToolDelegate:
    """Resolve a choice against the delegate files.

    Raises
    ------
    UsageError
        No delegate file (with ``benchmark_model`` flags) has that name or label, or the tool
        loads the delegate as a library and no device path was given.
    """
    base: dict[str, str] = {}
    host: str | None = None
    if choice.kind == EXTERNAL:
        bm = _EXTERNAL_FLAGS
    else:
        spec = bench_spec(choice.kind)
        if spec is None or spec.benchmark_model is None:
            raise UsageError(
                f"unknown delegate {choice.kind!r} for benchmark_model: {delegate_help()}"
            )
        bm, host, base = spec.benchmark_model, spec.host_executor, dict(spec.library.options)
        if bm.needs_library and not choice.path:
            example = spec.library.files[0] if spec.library.files else "libdelegate.so"
            raise UsageError(
                f"benchmark_model loads the {spec.name} delegate as an external library: give "
                f"its path on the device, e.g. --delegate external:/data/local/tmp/{example} "
                f"(bundles: --delegate-library {spec.name}=DEVICE_PATH)"
            )
    if bm.needs_library and not choice.path:
        raise UsageError(
            "--delegate external: needs a library path, e.g. external:/data/local/tmp/libd.so"
        )
    flags = tuple(f.replace(LIBRARY_PLACEHOLDER, choice.path or "") for f in bm.flags)
    return ToolDelegate(
        bm.label,
        flags,
        bm.provider,
        frozenset(bm.options),
        host,
        {**base, **dict(choice.options)},
    )


def delegate_help() -> str:
    """What ``--delegate`` accepts, from the delegate files on the search path."""
    try:
        names = f" ({', '.join(delegate_names())})"
    except UsageError:  # a bad EDGEPART_PATH is reported when the command runs, not in help
        names = ""
    return (
        f"a delegate{names} by name or by the benchmark_model label its file gives, or "
        f"{EXTERNAL}:DEVICE_PATH"
    )


def parse_delegate(spec: str) -> DelegateChoice:
    """Parse a delegate name (or label) from the delegate files, or ``external:PATH``.

    Raises
    ------
    UsageError
        If no delegate file has that name or label, or ``external:`` has no path.
    """
    text = spec.strip()
    if text.startswith(f"{EXTERNAL}:"):
        path = text[len(EXTERNAL) + 1 :]
        if not path:
            raise UsageError(
                "--delegate external: needs a library path, e.g. external:/data/local/tmp/libd.so"
            )
        return DelegateChoice(EXTERNAL, path)
    if not text or text == EXTERNAL or ":" in text or "/" in text:
        raise UsageError(f"unknown delegate {spec!r}: use {delegate_help()}")
    tool = tool_delegate(DelegateChoice(text))
    return DelegateChoice(tool.label)


@dataclass(frozen=True)
class BenchmarkOptions:
    """Everything that goes on one ``benchmark_model`` command line.

    ``None`` means "leave the tool's default" and emits no flag. ``cpu_fallback_xnnpack=False``
    adds ``--use_xnnpack=false`` to a run of an accelerator (any delegate that is not a CPU
    kernel set) so that nodes the delegate rejects run on the builtin kernels rather than on the
    default XNNPACK delegate. The delegate options (``gpu_backend`` ... ``hexagon_lib_path``)
    are emitted for the delegates whose file lists them under ``benchmark_model.options``.
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


_TOOL_OPTIONS = (
    "gpu_backend",
    "gpu_precision_loss_allowed",
    "nnapi_accelerator_name",
    "disable_nnapi_cpu",
    "hexagon_lib_path",
)
"""Fields of :class:`BenchmarkOptions` that are flags of one delegate (its ``options``)."""


def _delegate_flags(opts: BenchmarkOptions) -> list[str]:
    tool = tool_delegate(opts.delegate)
    flags: list[str] = []
    if tool.host_executor is None and opts.cpu_fallback_xnnpack is False:
        # Nodes the delegate rejects run on the builtin kernels, not the default XNNPACK.
        flags.append("--use_xnnpack=false")
    flags += tool.flags
    for name in _TOOL_OPTIONS:
        value = getattr(opts, name)
        if name not in tool.option_flags or value is None or value == "":
            continue
        if name == "gpu_backend" and value not in ("cl", "gl"):
            raise UsageError(f"gpu_backend must be 'cl' or 'gl', got {value!r}")
        flags.append(f"--{name}={_bool(value) if isinstance(value, bool) else value}")
    if "external_delegate_path" in tool.flag_names:
        options = {**tool.options, **opts.external_delegate_options}
        if options:
            items = []
            for key in sorted(options):
                value = str(options[key])
                if not _OPTION_KEY.match(key) or any(c in value for c in ";:"):
                    raise UsageError(
                        f"external delegate option {key!r}={value!r}: keys must be "
                        "[A-Za-z0-9_.-] and values may not contain ';' or ':' (the tool splits "
                        "on them)"
                    )
                items.append(f"{key}:{value}")
            flags.append("--external_delegate_options=" + ";".join(items))
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
        raise BenchmarkOutputError(
            "the text is not benchmark_model's --help output (no --graph flag listed); run "
            "'benchmark_model --help' and pass its combined stdout and stderr"
        )
    return names
