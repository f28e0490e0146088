"""Constraint predicates that need code, one module per delegate, found by name.

``common`` holds the generic predicates every delegate file may name. A delegate's own
predicates live in the module named after it (``xnnpack``, ``gpu``, ``nnapi``); a delegate file
reaches another family with its ``predicates:`` key (``gpu_mldrift`` uses ``gpu``). Modules are
imported on demand by :func:`edgepart.devices.capability.load_family`; nothing here lists them,
and nothing is ever imported from outside this package: a delegate file from a user's
directory can only name predicates registered here.
"""
