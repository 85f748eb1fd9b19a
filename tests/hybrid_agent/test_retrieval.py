"""Retrieval keyed to the active app, on the study's real 120-tool registry and OSWorld-MCP's schemas."""

import pytest
from hybrid_agent.errors import ConfigError, ToolCatalogError
from hybrid_agent.retrieval import BM25Retriever, NameFilterRetriever, RetrievalConfig, tokenize
from hybrid_agent.toolset import ToolSpec, load_osworld_mcp_apis, load_registry, tools_from_registry
from osworld_mcp_env.data_paths import osworld_data
from osworld_mcp_env.mcp_host.apps import APP_ALIASES, APP_NAMESPACES, app_from_wm_class, normalize_app

DATA = osworld_data()
REGISTRY = DATA.tools_registry
APIS = DATA.mcp_apis


@pytest.fixture(scope="module")
def registry():
    return load_registry(REGISTRY)


def test_registry_loads_120_tools_in_9_namespaces(registry):
    assert len(registry) == 120
    assert len({t.namespace for t in registry}) == 9
    goto = next(t for t in registry if t.qualified_name == "code.goto_file")
    assert goto.required == ("file_path",)  # line and character have defaults
    assert goto.parameter_names == ("file_path", "line", "character")


def test_calc_instruction_returns_calc_tools_with_sort_column_first(registry):
    result = BM25Retriever(registry).retrieve(
        "libreoffice-calc", "Sort column B in ascending order and save the file"
    )
    assert result.app == "libreoffice_calc"
    assert len(result.tools) == 18
    assert result.names[0] == "libreoffice_calc.sort_column"
    assert {t.namespace for t in result.tools} <= {"libreoffice_calc", "libreoffice_calc2"}
    assert list(result.scores) == sorted(result.scores, reverse=True)


@pytest.mark.parametrize("app", ["thunderbird", "gimp", "google_chrome", "some-unknown-app", None, ""])
def test_app_without_tools_gets_an_explicit_empty_set(registry, app):
    assert BM25Retriever(registry).retrieve(app, "Open the settings").tools == ()
    assert NameFilterRetriever(registry).retrieve(app, "Open the settings").tools == ()


def test_name_filter_returns_every_tool_of_the_app_in_catalog_order(registry):
    result = NameFilterRetriever(registry).retrieve("Calc", "anything")
    assert len(result.tools) == 26 + 5
    assert result.names[:2] == ("libreoffice_calc.get_workbook_info", "libreoffice_calc.save")


def test_os_namespace_is_not_a_substring_match(registry):
    # "os" appears inside "close"; exact namespace membership must not pick such tools.
    names = NameFilterRetriever(registry).retrieve("terminal", "x").names
    assert len(names) == 20 and all(n.startswith("os.") for n in names)


def test_osworld_mcp_schemas_load_with_namespaced_names():
    tools = load_osworld_mcp_apis(APIS)
    assert len(tools) == 132
    chrome = BM25Retriever(tools, RetrievalConfig(top_k=3)).retrieve(
        "google-chrome", "open the password settings"
    )
    assert chrome.names[0] == "google_chrome.open_password_settings"
    assert len(chrome.tools) == 3


def test_recent_actions_join_the_query_when_configured():
    tools = tools_from_registry(
        {
            "vlc": [
                {"name": "pause", "description": "Pause playback", "params": {}},
                {"name": "play", "description": "Start playback", "params": {}},
                {"name": "next", "description": "Skip to the next item", "params": {}},
                {
                    "name": "set_volume",
                    "description": "Change the volume level",
                    "params": {"level": {"type": "integer"}},
                },
            ]
        }
    )
    plain = BM25Retriever(tools, RetrievalConfig(top_k=1))
    with_history = BM25Retriever(tools, RetrievalConfig(top_k=1, recent_actions=1))
    assert plain.retrieve("vlc", "do it", ["Pause the playback"]).names == (
        "vlc.pause",
    )  # tie: catalog order
    assert with_history.retrieve("vlc", "do it", ["Set the volume", "Raise the volume level"]).names == (
        "vlc.set_volume",
    )


def test_alias_table_maps_every_alias_to_a_known_app():
    assert normalize_app("  LibreOffice-Calc ") == "libreoffice_calc"
    assert normalize_app("gnome-terminal-server") == "os"
    assert app_from_wm_class("libreoffice.libreoffice-calc") == "libreoffice_calc"
    assert app_from_wm_class("xfce4-terminal.Xfce4-terminal") == "os"
    assert app_from_wm_class("mousepad.Mousepad") == "code"
    assert app_from_wm_class("gimp-2.10.Gimp-2.10") == "gimp"
    assert app_from_wm_class("") == ""
    assert set(APP_NAMESPACES) <= set(APP_ALIASES.values())
    assert tokenize("libreoffice_calc.sort_column(B2)") == ["libreoffice", "calc", "sort", "column", "b2"]


def test_bad_config_and_catalog_are_refused(tmp_path):
    with pytest.raises(ConfigError):
        RetrievalConfig(top_k=0)
    with pytest.raises(ToolCatalogError, match=r"No '\*\.json' tool files"):
        load_osworld_mcp_apis(tmp_path)
    with pytest.raises(ToolCatalogError, match="has no 'name'"):
        tools_from_registry({"vlc": [{"description": "x"}]})
    assert ToolSpec("vlc", "play", "").to_function()["function"]["name"] == "vlc.play"


def test_study_always_include_adds_save_env_info_and_workbook_info_beyond_top_k():
    from hybrid_agent.toolset import served_tools

    tools = served_tools()
    result = BM25Retriever(tools, RetrievalConfig(top_k=3)).retrieve("libreoffice_calc", "Sort column B")
    assert len(result.tools) > 3
    assert set(result.names[3:]) == {
        "libreoffice_calc.save",
        "libreoffice_calc.env_info",
        "libreoffice_calc.get_workbook_info",
    } - set(result.names[:3])
    assert len(result.scores) == len(result.tools)
    # Explicit per-app lists replace the rule; {} turns it off.
    explicit = RetrievalConfig(top_k=3, always_include={"libreoffice_calc": ("libreoffice_calc.save",)})
    names = BM25Retriever(tools, explicit).retrieve("libreoffice_calc", "Sort column B").names
    assert names[3:] == ("libreoffice_calc.save",) or "libreoffice_calc.save" in names[:3]
    off = BM25Retriever(tools, RetrievalConfig(top_k=3, always_include={})).retrieve("calc", "Sort column B")
    assert len(off.tools) == 3


def test_full_document_ranks_by_parameter_descriptions():
    def tool(name, param, description):
        return {
            "name": name,
            "description": "Change a setting",
            "params": {param: {"description": description}},
        }

    # BM25Okapi's idf is 0 for a term in half the documents: a third one keeps it positive.
    tools = tools_from_registry(
        {"vlc": [tool("set_a", "x", "pitch"), tool("set_b", "y", "tempo"), tool("set_c", "z", "gain")]}
    )
    plain = BM25Retriever(tools, RetrievalConfig(top_k=1, always_include={}))
    full = BM25Retriever(tools, RetrievalConfig(top_k=1, document="full", always_include={}))
    assert plain.retrieve("vlc", "tempo").names == ("vlc.set_a",)  # no match: catalog order
    assert full.retrieve("vlc", "tempo").names == ("vlc.set_b",)
    with pytest.raises(ConfigError, match=r"Unknown retrieval document 'ful'\. Did you mean 'full'"):
        RetrievalConfig(document="ful")
