"""The public API: one call per step of the job, each taking everything the CLI takes.

Use it as ``import edgepart`` (every name is re-exported there, see ``edgepart.__all__``); the
modules here say where each call lives: :mod:`~edgepart.api.models` (read, inspect, claims),
:mod:`~edgepart.api.devices` (device profiles and delegates), :mod:`~edgepart.api.costs`
(roofline), :mod:`~edgepart.api.profiling` (latency tables measured on this host),
:mod:`~edgepart.api.placement` (place and compile a model, place a cost graph),
:mod:`~edgepart.api.memory` (static arena plans), :mod:`~edgepart.api.running` (run a bundle)
and :mod:`~edgepart.api.phones` (Android phones through adb). Each call is thin: it turns
names and paths into values and calls the layer that does the work; the CLI
(:mod:`edgepart.cli`) is argument parsing and printing over these calls.
"""
