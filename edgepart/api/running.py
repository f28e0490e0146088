"""Running: a bundle with LiteRT, behind LiteRT's Interpreter API or as one checked run."""

from __future__ import annotations

from edgepart.runtime.bundle_run import BundleRun, run_bundle
from edgepart.runtime.interpreter import PartitionedInterpreter

__all__ = ["BundleRun", "PartitionedInterpreter", "run_bundle"]
