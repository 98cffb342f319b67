"""Parallel map operators: a model call per item (:class:`LLMMap`), or an agent per
item in a sub-session of its own (:class:`AgenticMap`). Both store every item's
outcome as it completes and resume a run that stopped."""

from lossless.operators._agent import AgentTool
from lossless.operators._run import MapResult, MapStream
from lossless.operators.agentic_map import AgenticMap
from lossless.operators.llm_map import LLMMap

__all__ = ["AgentTool", "AgenticMap", "LLMMap", "MapResult", "MapStream"]
