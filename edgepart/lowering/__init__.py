"""Lowering a ``.tflite`` model under a device profile to the cost graph the solvers place.

Which processor may run which op (:mod:`edgepart.lowering.processor_support`, TFLite's own
claiming rules), the fusion pre-pass that merges ops that must or would run together
(:mod:`edgepart.lowering.fuse`), the cost graph itself (:mod:`edgepart.lowering.from_model`)
and TFLite's default placement as the baseline (:mod:`edgepart.lowering.default_placement`).
"""
