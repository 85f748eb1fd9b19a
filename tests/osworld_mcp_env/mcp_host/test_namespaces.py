"""The namespace table is the one list of namespaces: the catalog, the servers and the app table agree."""

import importlib
import pkgutil
from importlib import resources

import pytest
from osworld_mcp_env.errors import RegistryError
from osworld_mcp_env.mcp_host.apps import APP_ALIASES, APP_NAMESPACES, app_namespaces
from osworld_mcp_env.mcp_host.namespaces import NAMESPACE_TABLE, NAMESPACES
from osworld_mcp_env.mcp_servers import registry_for
from osworld_mcp_env.mcp_servers.catalog import load_catalog
from osworld_mcp_env.mcp_servers.registry import ToolRegistry

ENTRIES = [NAMESPACE_TABLE.get(name) for name in NAMESPACES]


def test_the_table_lists_each_namespace_once_in_its_stable_order():
    assert sorted(NAMESPACES) == NAMESPACE_TABLE.names() and len(set(NAMESPACES)) == len(NAMESPACES)
    groups = [group for entry in ENTRIES for group in entry.osworld_groups]
    assert len(groups) == len(set(groups))  # an OSWorld-MCP group folds into one namespace
    assert all(entry.osworld_groups[0] == entry.name for entry in ENTRIES if entry.osworld_groups)
    # Only the semantic channel is ours alone: no OSWorld-MCP group, no app (env option ax_tools).
    assert [entry.name for entry in ENTRIES if not entry.osworld_groups] == ["ax"]
    assert NAMESPACE_TABLE.get("ax").apps == ()


@pytest.mark.parametrize("name", NAMESPACES)
def test_every_table_namespace_serves_tools_built_from_its_entry(name):
    registry = registry_for(name)
    assert registry.entry is NAMESPACE_TABLE.get(name) and registry.namespace == name
    assert registry.tools, f"{name} serves no tool"


def test_every_tool_registry_in_the_servers_is_a_table_namespace():
    package = importlib.import_module("osworld_mcp_env.mcp_servers")
    found = {}
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        found |= {id(v): v for v in vars(module).values() if isinstance(v, ToolRegistry)}
    assert {r.namespace: r for r in found.values()} == {name: registry_for(name) for name in NAMESPACES}


def test_every_served_tool_is_in_its_namespace_catalog_and_every_catalog_namespace_is_in_the_table():
    catalog = load_catalog()
    assert list(catalog) == list(NAMESPACES)
    for name in NAMESPACES:
        if not NAMESPACE_TABLE.get(name).osworld_groups:
            assert catalog[name] == {}  # its schemas are its functions' own
            continue
        served = set(registry_for(name).tools)
        assert served <= set(catalog[name]), served - set(catalog[name])


def test_every_osworld_schema_file_is_a_group_of_some_namespace():
    folder = resources.files("osworld_mcp_env.mcp_servers").joinpath("osworld_schemas")
    stems = {p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json")}
    assert stems == {group for entry in ENTRIES for group in entry.osworld_groups}


def test_the_app_table_shows_each_namespace_for_its_apps():
    assert {app for entry in ENTRIES for app in entry.apps} == set(APP_NAMESPACES)
    assert set(APP_NAMESPACES) <= set(APP_ALIASES.values())
    for entry in ENTRIES:
        for app in entry.apps:
            assert app_namespaces(app)[0] == entry.name and set(entry.osworld_groups) <= set(
                app_namespaces(app)
            )


def test_an_unknown_namespace_names_the_closest_one():
    with pytest.raises(
        RegistryError, match=r"Unknown namespace 'libreoffice_calcc'\. Did you mean 'libreoffice_calc'\?"
    ):
        registry_for("libreoffice_calcc")
