"""Which MCP tools are shown at a step: keyed to the active app, ranked by BM25.

The active app id the env reports (a ``WM_CLASS``, a process name, an app
name) goes through the env's alias table (``osworld_mcp_env.mcp_host.apps``) to a
canonical app key; the app key names
its tool namespaces (``libreoffice_calc`` -> ``libreoffice_calc``,
``libreoffice_calc2``). Membership is exact, never a substring test (``os`` is
not in "close"). An app with no tools gets an explicit empty set: the study's
BM25 fallback handed such apps all 120 tools, and unrelated tools confuse the model.

Two retrievers share :class:`ToolRetriever`: :class:`BM25Retriever` (top-k over
a document per tool, then the app's always-include tools beyond k; query =
instruction + optional recent actions) and :class:`NameFilterRetriever`
(OSWorld-MCP's plain filter: every tool of the app, unranked).

The always-include tools matter: without ``<app>.save`` a model can edit a
document through tools but never finish the task through them. The study adds
every candidate whose name contains ``save``, ``env_info`` or
``get_workbook_info`` (its ``_MANDATORY_KEYWORDS``); that is the default here,
and :attr:`RetrievalConfig.always_include` replaces it with explicit per-app lists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from osworld_mcp_env.mcp_host.apps import APP_NAMESPACES, normalize_app
from osworld_mcp_env.registry import unknown_name_message
from rank_bm25 import BM25Okapi

from hybrid_agent.errors import ConfigError
from hybrid_agent.toolset import ToolSpec


def app_tools(app: str | None, tools: Sequence[ToolSpec]) -> list[ToolSpec]:
    """Every tool whose namespace belongs to ``app`` (canonical or raw id), in catalog order."""
    key = normalize_app(app)
    namespaces = set(APP_NAMESPACES.get(key, ())) if key else set()
    return [tool for tool in tools if tool.namespace in namespaces]


_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric runs; ``sort_column`` -> ``["sort", "column"]``."""
    return _TOKEN.findall(text.lower())


def tool_document(tool: ToolSpec) -> list[str]:
    """The default BM25 document of a tool: name, description and parameter names."""
    return tokenize(" ".join([tool.name, tool.description, *tool.parameter_names]))


def tool_document_full(tool: ToolSpec) -> list[str]:
    """The study's BM25 document: name, namespace, description and parameter descriptions."""
    properties = tool.parameters.get("properties", {})
    described = [f"{name} {spec.get('description', '')}" for name, spec in properties.items()]
    return tokenize(" ".join([tool.name, tool.namespace, tool.description, *described]))


DOCUMENTS: Mapping[str, Callable[[ToolSpec], list[str]]] = {
    "name_params": tool_document,
    "full": tool_document_full,
}
"""BM25 document builders by name (:attr:`RetrievalConfig.document`)."""

STUDY_ALWAYS_INCLUDE_KEYWORDS = ("save", "env_info", "get_workbook_info")


def always_included(
    app: str | None, candidates: Sequence[ToolSpec], lists: Mapping[str, Sequence[str]] | None
) -> list[ToolSpec]:
    """The app's tools that are shown whatever their rank, in catalog order.

    Args:
        app: Canonical app key.
        candidates: The app's tools.
        lists: Explicit qualified names per app; ``None`` applies the study's keyword rule
            (a bare name containing ``save``, ``env_info`` or ``get_workbook_info``).
    """
    if lists is None:
        return [t for t in candidates if any(k in t.name for k in STUDY_ALWAYS_INCLUDE_KEYWORDS)]
    wanted = set(lists.get(app or "", ()))
    return [t for t in candidates if t.qualified_name in wanted]


@dataclass(frozen=True)
class Retrieval:
    """The tools shown at one step, with what produced them (logged per step for metrics).

    Attributes:
        app: The canonical app key, or ``None`` when the raw id is unknown.
        tools: The tools to show, best first.
        scores: The retriever's score of each shown tool (empty for unranked retrievers).
    """

    app: str | None
    tools: tuple[ToolSpec, ...]
    scores: tuple[float, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """Qualified names of the shown tools."""
        return tuple(tool.qualified_name for tool in self.tools)


class ToolRetriever(Protocol):
    """Chooses the MCP tools shown to the model at a step."""

    def retrieve(self, app: str | None, instruction: str, recent_actions: Sequence[str] = ()) -> Retrieval:
        """Returns the tools for the active ``app`` given the task and the recent actions."""
        ...


@dataclass(frozen=True)
class RetrievalConfig:
    """BM25 retrieval settings (study defaults: top-18, instruction-only query, keyword always-include).

    Attributes:
        top_k: Tools ranked in at most (always-included tools come on top of these).
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
        recent_actions: How many of the latest one-line actions join the query (0: instruction only).
        document: The text a tool is ranked by: ``name_params`` (name, description, parameter
            names) or ``full`` (the study's: name, namespace, description, parameter descriptions).
        always_include: Qualified names shown for an app whatever their rank
            (``{"libreoffice_calc": ("libreoffice_calc.save", ...)}``); ``None`` applies the
            study's keyword rule; ``{}`` turns always-include off.
    """

    top_k: int = 18
    k1: float = 1.5
    b: float = 0.75
    recent_actions: int = 0
    document: str = "name_params"
    always_include: Mapping[str, tuple[str, ...]] | None = None

    def __post_init__(self) -> None:
        if self.top_k < 1 or self.recent_actions < 0:
            raise ConfigError(
                f"top_k must be >= 1 and recent_actions >= 0, got {self.top_k}, {self.recent_actions}."
            )
        if self.document not in DOCUMENTS:
            raise ConfigError(unknown_name_message("retrieval document", self.document, DOCUMENTS))


@dataclass
class BM25Retriever:
    """BM25 top-k over the active app's tools."""

    catalog: Sequence[ToolSpec]
    config: RetrievalConfig = field(default_factory=RetrievalConfig)

    def retrieve(self, app: str | None, instruction: str, recent_actions: Sequence[str] = ()) -> Retrieval:
        """Ranks the app's tools against the instruction (+ the last ``config.recent_actions`` actions).

        The top ``config.top_k`` come first, best first; the app's always-include tools not
        among them follow with their scores. Ties keep catalog order (deterministic).
        """
        key = normalize_app(app)
        candidates = app_tools(key, self.catalog)
        if not candidates:
            return Retrieval(app=key, tools=())
        recent = list(recent_actions)[-self.config.recent_actions :] if self.config.recent_actions else []
        query = tokenize(" ".join([instruction, *recent]))
        document = DOCUMENTS[self.config.document]
        bm25 = BM25Okapi([document(tool) for tool in candidates], k1=self.config.k1, b=self.config.b)
        scores = bm25.get_scores(query) if query else [0.0] * len(candidates)
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[: self.config.top_k]
        position = {id(tool): i for i, tool in enumerate(candidates)}
        for tool in always_included(key, candidates, self.config.always_include):
            if position[id(tool)] not in order:
                order.append(position[id(tool)])
        return Retrieval(
            app=key,
            tools=tuple(candidates[i] for i in order),
            scores=tuple(float(scores[i]) for i in order),
        )


@dataclass
class NameFilterRetriever:
    """OSWorld-MCP's plain retriever: every tool of the active app, in catalog order."""

    catalog: Sequence[ToolSpec]

    def retrieve(self, app: str | None, instruction: str, recent_actions: Sequence[str] = ()) -> Retrieval:
        """Returns all of the app's tools; the instruction is not used."""
        key = normalize_app(app)
        return Retrieval(app=key, tools=tuple(app_tools(key, self.catalog)))
