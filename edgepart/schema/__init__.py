"""The TFLite schema vocabulary: generated schema tables and builtin operator names.

The lowest layer of edgepart: :mod:`edgepart.schema.tables` is generated from the installed
LiteRT schema bindings by ``tools/gen_schema.py``; :mod:`edgepart.schema.opnames` names the
builtin operators and their option tables. The IR, the reader and the writer build on it.
"""
