"""The one Registry: duplicates, the unknown-name message, package error classes, lazy providers."""

import re
import subprocess
import sys

import pytest
from grpo_trainer import errors as grpo_errors
from hybrid_agent import errors as agent_errors
from osworld_mcp_env.errors import RegistryError
from osworld_mcp_env.registry import Registry, unknown_name_message


def test_unknown_names_get_the_closest_name_then_every_known_one():
    msg = unknown_name_message("rule", "drop_on_sucess", ["skip", "drop_on_success", "drop_on_effect"])
    assert msg == (
        "Unknown rule 'drop_on_sucess'. Did you mean 'drop_on_success'? "
        "Known: drop_on_effect, drop_on_success, skip."
    )
    assert unknown_name_message("rule", "zzz", []) == "Unknown rule 'zzz'. Known: none."


def test_a_taken_name_refuses_another_entry_but_not_the_same_one():
    reg: Registry[object] = Registry("widget")
    entry = object()
    assert reg.add("a", entry) is entry and reg.add("a", entry) is entry
    with pytest.raises(RegistryError, match=re.escape("Duplicate widget 'a': already registered to <object")):
        reg.add("a", object())
    with pytest.raises(RegistryError, match="non-empty string"):
        reg.add("", entry)
    assert reg.names() == ["a"] and list(reg) == ["a"] and len(reg) == 1


def test_lookups_of_odd_names_are_registry_errors_not_crashes():
    reg: Registry[int] = Registry("widget")
    reg.add("a", 1)
    assert ["x"] not in reg
    with pytest.raises(RegistryError, match=re.escape("Unknown widget ['x']. Known: a.")):
        reg.get(["x"])  # type: ignore[arg-type]  # a task file can hold any JSON


@pytest.mark.parametrize(
    ("error", "package_base"),
    [
        (agent_errors.RegistryError, agent_errors.HybridAgentError),
        (grpo_errors.RegistryError, grpo_errors.GRPOError),
    ],
)
def test_a_package_error_class_is_caught_by_its_package_base_and_by_the_stack_one(error, package_base):
    reg: Registry[int] = Registry("term", error=error)
    for catch in (error, package_base, RegistryError, KeyError):
        with pytest.raises(catch):
            reg.get("missing")
    with pytest.raises(error) as info:
        reg.get("missing")
    assert str(info.value) == "Unknown term 'missing'. Known: none."  # not KeyError's quoted repr


def test_providers_are_imported_on_the_first_lookup_only(tmp_path, monkeypatch):
    reg: Registry[int] = Registry("plugin", providers=("registry_provider_probe",))
    (tmp_path / "registry_provider_probe.py").write_text(
        "import sys\nREG = sys.modules['__registry_under_test__']\nREG.add('from_provider', 1)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "__registry_under_test__", reg)
    monkeypatch.delitem(sys.modules, "registry_provider_probe", raising=False)
    reg.add("direct", 2)  # registering does not load the providers
    assert "registry_provider_probe" not in sys.modules
    assert reg.names() == ["direct", "from_provider"]
    assert reg.get("from_provider") == 1


def test_loading_tasks_does_not_import_the_evaluators_until_a_name_is_checked():
    probe = (
        "import sys\n"
        "from osworld_mcp_env.tasks import loader\n"
        "from osworld_mcp_env.tasks.checks import METRICS\n"
        "assert 'osworld_mcp_env.evaluators' not in sys.modules, 'the loader imported the evaluators'\n"
        "assert 'compare_table' in METRICS\n"
        "assert 'osworld_mcp_env.evaluators' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=300)
