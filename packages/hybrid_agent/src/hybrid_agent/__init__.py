"""Agent harness for hybrid GUI + MCP computer-use agents.

The core is pure and exactly tested: :mod:`~hybrid_agent.context` builds the
study's context (Eq. 1) under the retention rules of :mod:`~hybrid_agent.retention`
(Eq. 2 and extensions), :mod:`~hybrid_agent.parse` turns model text into one call
or a structured error, :mod:`~hybrid_agent.retrieval` picks the MCP tools,
:mod:`~hybrid_agent.coords` maps coordinates and :mod:`~hybrid_agent.tokens`
counts input tokens the way the model's processor does.
"""

from hybrid_agent.context import Context, ContextConfig, build_context
from hybrid_agent.coords import CoordinateConfig, CoordinatePolicy, to_screen
from hybrid_agent.parse import ParsedAction, ParseError, ParseErrorCode, parse_response
from hybrid_agent.prompt import PromptConfig
from hybrid_agent.retention import RetentionConfig, RetentionPlan, RetentionRecord, register_retention
from hybrid_agent.retrieval import BM25Retriever, NameFilterRetriever, RetrievalConfig
from hybrid_agent.toolset import ToolSpec, load_osworld_mcp_apis, load_registry
from hybrid_agent.trajectory import Call, Evidence, Frame, Observation, Step

__all__ = [
    "BM25Retriever",
    "Call",
    "Context",
    "ContextConfig",
    "CoordinateConfig",
    "CoordinatePolicy",
    "Evidence",
    "Frame",
    "NameFilterRetriever",
    "Observation",
    "ParseError",
    "ParseErrorCode",
    "ParsedAction",
    "PromptConfig",
    "RetentionConfig",
    "RetentionPlan",
    "RetentionRecord",
    "RetrievalConfig",
    "Step",
    "ToolSpec",
    "build_context",
    "load_osworld_mcp_apis",
    "load_registry",
    "parse_response",
    "register_retention",
    "to_screen",
]
