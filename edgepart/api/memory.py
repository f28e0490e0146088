"""Memory: static arena plans of a buffer table, a model or a bundle, and TFLite Micro plans."""

from __future__ import annotations

from edgepart.deploy.memory_plans import STRATEGIES, MemoryPlans, plan_memory, write_tflm_plan

__all__ = ["STRATEGIES", "MemoryPlans", "plan_memory", "write_tflm_plan"]
