"""The cpu_builtin delegate file's version caps agree with LiteRT's op resolver."""

from __future__ import annotations

import warnings

from edgepart.devices.delegate import load_delegate
from edgepart.ir.builder import ModelBuilder
from edgepart.ir.dtypes import DType
from edgepart.tflite.writer import write_model


def _resolves(name: str, version: int) -> bool:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", DType.FLOAT32, (1, 4))
    y = g.tensor("y", DType.FLOAT32, (1, 4))
    g.op(name, [x], [y], version=version)
    g.output(y)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            Interpreter(
                model_content=write_model(mb.build()),
                experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
            )
    except Exception as err:  # the wrapper raises ValueError/RuntimeError with TFLite's text
        return "Didn't find op" not in str(err)
    return True


def test_version_caps_match_litert():
    spec = load_delegate("cpu_builtin")
    wrong = []
    for name, rule in sorted(spec.ops.items()):
        if rule.max_version is None:
            continue
        if not _resolves(name, rule.max_version) or _resolves(name, rule.max_version + 1):
            wrong.append(name)
    assert not wrong, wrong
