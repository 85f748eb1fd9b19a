"""Every tool name the agent can show is one the env serves (the env's own served catalog, no desktop)."""

import json
import re

import pytest
from hybrid_agent.prompt import system_prompt
from hybrid_agent.retrieval import BM25Retriever, NameFilterRetriever, RetrievalConfig
from hybrid_agent.toolset import fold_to_served, load_registry, served_tools
from osworld_mcp_env.data_paths import osworld_data
from osworld_mcp_env.mcp_host.apps import APP_ALIASES
from osworld_mcp_env.mcp_host.namespaces import OSWORLD_NAMESPACES as NAMESPACES
from osworld_mcp_env.mcp_servers import registry_for

DATA = osworld_data()
REGISTRY = DATA.tools_registry
INSTRUCTIONS = [
    "",
    "Sort column B in ascending order and save the file",
    "Replace every occurrence of failure with success in the report",
    "Add a new slide with the title Results",
    "Create a folder projects in the home directory",
    "Set the editor word wrap column to 80 and install the python extension",
    "Turn on do not disturb and convert the video to a gif",
]


def served_names() -> set[str]:
    return {f"{ns}.{method}" for ns in NAMESPACES for method in registry_for(ns).tools}


def tools_block_names(prompt: str) -> list[str]:
    block = re.search(r"<tools>\n(.*)\n</tools>", prompt, re.DOTALL).group(1)
    return [json.loads(line)["function"]["name"] for line in block.splitlines()]


@pytest.fixture(scope="module")
def catalog():
    return served_tools()


def test_served_catalog_is_the_env_registry(catalog):
    assert {t.qualified_name for t in catalog} == served_names()
    assert "libreoffice_calc.save" in served_names()
    assert not any(t.namespace.endswith("2") for t in catalog)


@pytest.mark.parametrize("document", ["name_params", "full"])
@pytest.mark.parametrize("top_k", [1, 18, 200])
def test_every_name_retrieval_and_the_prompt_can_show_is_served(catalog, document, top_k):
    served = served_names()
    retrievers = [
        BM25Retriever(catalog, RetrievalConfig(top_k=top_k, document=document)),
        NameFilterRetriever(catalog),
    ]
    shown_apps = set()
    for app in sorted(set(APP_ALIASES) | set(APP_ALIASES.values())):
        for instruction in INSTRUCTIONS:
            for retriever in retrievers:
                result = retriever.retrieve(app, instruction)
                assert set(result.names) <= served, (app, instruction)
                names = tools_block_names(system_prompt(result.tools))
                assert names[0] == "computer_use"
                assert set(names[1:]) == set(result.names) <= served
                shown_apps |= {result.app} if result.names else set()
    assert shown_apps == set(NAMESPACES)  # every app with tools was walked


def test_the_studys_registry_folds_onto_served_names(catalog):
    registry = load_registry(REGISTRY)
    assert any(t.namespace == "libreoffice_calc2" for t in registry)
    kept, dropped = fold_to_served(registry, catalog)
    names = {t.qualified_name for t in kept}
    assert names <= served_names()
    assert "libreoffice_calc.transpose_range" in names or "libreoffice_calc2.transpose_range" not in {
        t.qualified_name for t in registry
    }
    # Everything dropped is a name the env does not serve under either namespace.
    for name in dropped:
        namespace, method = name.split(".", 1)
        assert f"{namespace.rstrip('0123456789')}.{method}" not in served_names()
    assert len(kept) + len(dropped) == len(registry)
    for app in ("libreoffice_calc", "code", "os"):
        assert set(BM25Retriever(kept).retrieve(app, INSTRUCTIONS[1]).names) <= served_names()
