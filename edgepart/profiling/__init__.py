"""Measuring latencies: every op (or fused group) of a model on this host or on a phone.

The host profiler (:mod:`edgepart.profiling.host`) times timing units with the real LiteRT
interpreter (:mod:`edgepart.profiling.timing`); phone profiling (:mod:`edgepart.profiling.phone`)
runs ``benchmark_model`` through adb and turns its per-op profiles into table entries
(:mod:`edgepart.profiling.op_table`). Both write latency tables (:mod:`edgepart.cost.table`).
"""
