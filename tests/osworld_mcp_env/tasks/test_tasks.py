"""Task model, loader, validation, splits, file cache and setup-step registry (no desktop)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from osworld_mcp_env.actions import GuiAction, parse_action
from osworld_mcp_env.errors import RegistryError, SetupStepError, TaskError, TaskNotFound
from osworld_mcp_env.evaluators import METRICS, register_metric
from osworld_mcp_env.registry import Registry
from osworld_mcp_env.tasks import (
    BUNDLED_TASK_IDS,
    SETUP_STEPS,
    CacheMiss,
    Conj,
    FileCache,
    SetupStep,
    Task,
    TaskContext,
    TaskLibrary,
    TaskRunConfig,
    bundled_solution,
    default_library,
    load_split,
    load_task,
    materialize_bundled_files,
    register_setup_step,
    run_setup,
    run_steps,
    split_task_ids,
    task_from_dict,
)
from osworld_mcp_env.tasks.cache import osworld_cache_name
from osworld_mcp_env.tasks.setup import fill_placeholders
from task_data import OSWORLD_EXAMPLES, OSWORLD_SPLITS, real_task_files


def minimal(**overrides):
    raw = {
        "id": "t1",
        "instruction": "do it",
        "config": [],
        "evaluator": {"func": "exact_match", "result": {"type": "rule", "rules": "a"}},
    }
    raw.update(overrides)
    return raw


# --- real OSWorld data ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", real_task_files(), ids=lambda p: f"{p.parent.name}/{p.stem[:8]}")
def test_every_real_task_loads_or_fails_naming_the_unknown_name(path: Path):
    lenient = load_task(path, strict=False)
    assert lenient.id == path.stem and lenient.domain == path.parent.name
    if lenient.supported:
        assert load_task(path).supported
        return
    with pytest.raises(TaskError) as err:
        load_task(path)
    # The strict error names every problem the lenient load recorded.
    assert all(problem in str(err.value) for problem in lenient.unsupported)


@pytest.mark.parametrize("path", real_task_files(), ids=lambda p: p.stem[:8])
def test_real_task_json_round_trips(path: Path):
    task = load_task(path, strict=False)
    again = task_from_dict(json.loads(json.dumps(task.to_dict())))
    assert again == task


def test_real_multi_func_task_is_normalised_into_checks():
    task = load_task(OSWORLD_EXAMPLES / "multi_apps" / "2373b66a-092d-44cb-bfd7-82e86e7a3b4d.json")
    assert [c.func for c in task.evaluator.checks] == ["file_contains", "check_line_number"]
    assert task.evaluator.conj is Conj.AND
    assert all(c.result.type == "vm_file" and c.expected.type == "rule" for c in task.evaluator.checks)
    assert task.config[0].type == "command"


def test_real_infeasible_task_has_no_checks():
    task = load_task(OSWORLD_EXAMPLES / "gimp" / "045bf3ff-9077-4b86-b483-a1040a949cff.json")
    assert task.evaluator.infeasible and task.evaluator.checks == ()


def test_library_finds_real_tasks_by_id_and_suggests_close_ids():
    lib = TaskLibrary([OSWORLD_EXAMPLES])
    task = lib.load("01b269ae-2111-4a07-81fd-3fcd711993b0")
    assert task.snapshot == "libreoffice_calc"
    with pytest.raises(TaskNotFound, match=re.escape("Did you mean '01b269ae-2111-4a07-81fd-3fcd711993b0'")):
        lib.load("01b269ae-2111-4a07-81fd-3fcd711993b1")


def test_split_lists_beside_an_examples_folder_are_not_task_ids(tmp_path):
    (tmp_path / "examples" / "os").mkdir(parents=True)
    (tmp_path / "examples" / "os" / "t1.json").write_text('{"id": "t1"}')
    (tmp_path / "train.json").write_text('{"os": ["t1"]}')
    (tmp_path / "settings" / "drive").mkdir(parents=True)
    (tmp_path / "settings" / "drive" / "settings.json").write_text("{}")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "t2.json").write_text('{"id": "t2"}')
    assert set(TaskLibrary([tmp_path]).index()) == {"t1"}
    # Without an examples folder, every JSON (solutions aside) is a task file.
    assert set(TaskLibrary([tmp_path / "other"]).index()) == {"t2"}
    # The bundled suite keeps its splits beside its examples: they are not tasks.
    bundled = set(default_library().index())
    assert {"train", "test"}.isdisjoint(bundled) and "calc-column-sum" in bundled


def test_osworld_splits_load_with_their_counts():
    split = load_split(OSWORLD_SPLITS / "test_all.json")
    assert sum(len(v) for v in split.values()) == 369
    assert len(split["libreoffice_calc"]) == 47
    ids = split_task_ids(split, ["os"])
    assert len(ids) == 24 and "28cc3b7e-b194-4bc9-8353-d04c0f4d56d2" in ids
    example_ids = {p.stem for p in real_task_files()}
    assert example_ids <= set(split_task_ids(split))
    with pytest.raises(TaskError, match=re.escape("Domains ['calc'] are not in the split")):
        split_task_ids(split, ["calc"])


def test_bad_split_shapes_raise(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text('["a", "b"]')
    with pytest.raises(TaskError, match="must map each domain"):
        load_split(bad)
    with pytest.raises(TaskNotFound):
        load_split(tmp_path / "nope.json")


# --- model -----------------------------------------------------------------------------------------


def test_dirty_source_key_is_read():
    raw = minimal()
    raw["sou  rce"] = "NL2Bash"
    assert load_task(raw).source == "NL2Bash"


def test_unknown_keys_are_kept_and_written_back():
    task = load_task(minimal(my_note={"x": 1}))
    assert task.extra == {"my_note": {"x": 1}}
    assert task.to_dict()["my_note"] == {"x": 1}


def test_missing_instruction_names_the_task_and_field():
    raw = minimal()
    del raw["instruction"]
    with pytest.raises(TaskError, match=re.escape("task 't1': missing required field 'instruction'")):
        task_from_dict(raw)


def test_func_list_with_wrong_result_length_is_rejected():
    raw = minimal(
        evaluator={"func": ["exact_match", "exact_match"], "result": [{"type": "rule", "rules": 1}]}
    )
    with pytest.raises(TaskError, match="must be a list of 2 entries"):
        task_from_dict(raw)


def test_infeasible_cannot_be_mixed_with_other_funcs():
    with pytest.raises(TaskError, match="'infeasible' cannot be combined"):
        task_from_dict(minimal(evaluator={"func": ["infeasible", "exact_match"]}))


def test_bad_conj_is_rejected():
    ev = {"func": ["exact_match"], "conj": "xor", "result": [{"type": "rule", "rules": 1}]}
    with pytest.raises(TaskError, match="conj must be 'and' or 'or'"):
        task_from_dict(minimal(evaluator=ev))


def test_single_and_list_funcs_give_the_same_shape():
    one = task_from_dict(minimal())
    many = task_from_dict(
        minimal(evaluator={"func": ["exact_match"], "result": [{"type": "rule", "rules": "a"}]})
    )
    assert one.evaluator.checks == many.evaluator.checks


def test_string_true_shell_and_proxy_are_booleans():
    task = task_from_dict(minimal(proxy="true", fixed_ip="false"))
    assert task.proxy is True and task.fixed_ip is False


# --- validation at load ------------------------------------------------------------------------------


def test_unknown_metric_is_named_with_a_suggestion():
    raw = minimal(evaluator={"func": "compare_tabel", "result": {"type": "rule", "rules": 1}})
    with pytest.raises(TaskError) as info:
        load_task(raw)
    msg = str(info.value)
    assert "Unknown metric 'compare_tabel'. Did you mean 'compare_table'" in msg
    assert "Known: " in msg and "compare_table, " in msg


def test_every_unknown_name_is_listed_at_once():
    raw = minimal(
        config=[{"type": "lanch", "parameters": {}}],
        evaluator={
            "func": "exact_match",
            "result": {"type": "vm_fiel"},
            "postconfig": [{"type": "chrome_open_tab", "parameters": {}}],
        },
    )
    with pytest.raises(TaskError) as info:
        load_task(raw)
    msg = str(info.value)
    assert "config[0]: Unknown setup step 'lanch'" in msg and "Did you mean 'launch'" in msg
    assert "evaluator.postconfig[0]: Unknown setup step 'chrome_open_tab'" in msg
    assert "evaluator.result[0]: Unknown getter 'vm_fiel'" in msg and "Did you mean 'vm_file'" in msg


def test_unsupported_compare_table_rule_type_fails_at_load():
    ev = {
        "func": "compare_table",
        "result": {"type": "vm_file", "path": "/a.xlsx", "dest": "a.xlsx"},
        "options": {"rules": [{"type": "pivot_tables", "sheet_idx0": 0, "sheet_idx1": "EI0"}]},
    }
    with pytest.raises(
        TaskError,
        match=re.escape("Unknown compare_table rule type 'pivot_tables'. Did you mean 'pivot_table'?"),
    ):
        load_task(minimal(evaluator=ev))


def test_lenient_task_refuses_to_run(tmp_path: Path):
    task = load_task(minimal(evaluator={"func": "nope"}), strict=False)
    assert not task.supported
    with pytest.raises(TaskError, match="is not supported here"):
        run_setup(task, None, TaskContext(task.id, tmp_path))


# --- registries -----------------------------------------------------------------------------------------


def test_registry_rejects_duplicates_and_lists_known_names():
    reg: Registry[int] = Registry("widget")
    reg.add("a", 1)
    with pytest.raises(RegistryError, match=re.escape("Duplicate widget 'a'")):
        reg.add("a", 2)
    with pytest.raises(RegistryError, match=re.escape("Unknown widget 'b'. Known: a.")):
        reg.get("b")


def test_builtin_registries_reject_a_second_registration():
    with pytest.raises(RegistryError, match=re.escape("Duplicate setup step 'launch'")):
        register_setup_step("launch")(lambda desktop, context, **p: None)
    with pytest.raises(RegistryError, match=re.escape("Duplicate metric 'compare_table'")):
        register_metric("compare_table")(lambda r, e, **o: 1.0)


def test_decorator_without_a_name_says_how_to_fix_it():
    with pytest.raises(
        RegistryError, match=re.escape("use @register_setup_step('name'), not @register_setup_step.")
    ):
        register_setup_step(lambda desktop, context: None)


def test_osworld_no_internet_setup_types_are_all_registered():
    for name in ("download", "open", "launch", "execute", "activate_window", "command", "sleep"):
        assert name in SETUP_STEPS
    assert "compare_table" in METRICS


# --- file cache --------------------------------------------------------------------------------------------

URL = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/os/abc/setup%20x.sh"


@pytest.mark.parametrize(
    "relpath",
    [
        f"abc/{osworld_cache_name(URL, 'setup x.sh')}",  # OSWorld layout, url basename
        f"abc/{osworld_cache_name(URL, 'dest.sh')}",  # OSWorld layout, guest path basename
        "abc/setup x.sh",  # per task, by name
        "os/abc/setup x.sh",  # mirror of the HF dataset
        osworld_cache_name(URL, "setup x.sh"),  # flat, url-keyed
        "setup x.sh",  # flat, by name
    ],
)
def test_cache_resolves_every_layout(tmp_path: Path, relpath: str):
    target = tmp_path / relpath
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("echo hi")
    assert FileCache((tmp_path,)).resolve(URL, "abc", "dest.sh") == target


def test_cache_miss_names_the_url_the_task_and_every_path(tmp_path: Path):
    cache = FileCache((tmp_path / "one", tmp_path / "two"))
    with pytest.raises(CacheMiss) as info:
        cache.resolve(URL, "abc", "dest.sh")
    msg = str(info.value)
    assert repr(URL) in msg and "(task 'abc')" in msg
    for path in cache.candidates(URL, "abc", "dest.sh"):
        assert str(path) in msg
    assert str(tmp_path / "two" / "setup x.sh") in msg
    assert isinstance(info.value, SetupStepError)


def test_cache_never_looks_outside_its_roots(tmp_path: Path):
    """A ``..`` in the url's path or the task id is not a way to read host files into the desktop."""
    secret = tmp_path / "secret.txt"
    secret.write_text("host file")
    root = tmp_path / "cache" / "inner"
    root.mkdir(parents=True)
    url = "https://x.invalid/a/%2e%2e/%2e%2e/%2e%2e/secret.txt"
    for path in FileCache((root,)).candidates(url, "../..", "secret.txt"):
        assert path.resolve().is_relative_to(root.resolve()), path
    with pytest.raises(CacheMiss):
        FileCache((root,)).resolve(url, "../..", "secret.txt")


def test_download_step_with_missing_file_is_a_setup_error(tmp_path: Path):
    ctx = TaskContext("abc", tmp_path / "run", TaskRunConfig(cache_roots=(tmp_path / "cache",)))
    step = SetupStep("download", {"files": [{"url": URL, "path": "/home/user/x.sh"}]})
    with pytest.raises(SetupStepError) as info:
        run_steps([step], None, ctx, phase="setup")
    msg = str(info.value)
    assert msg.startswith("setup step 0 (download) of task 'abc' failed:")
    assert URL in msg and str(tmp_path / "cache" / "x.sh") in msg


# --- setup steps without a desktop -------------------------------------------------------------------------


def test_sleep_is_capped_by_config(tmp_path: Path):
    slept: list[float] = []
    ctx = TaskContext("t", tmp_path, TaskRunConfig(max_sleep_s=0.25), sleep=slept.append)
    run_steps(
        [SetupStep("sleep", {"seconds": 3}), SetupStep("sleep", {"seconds": 0.1})], None, ctx, phase="setup"
    )
    assert slept == [0.25, 0.1]


def test_bad_step_parameters_name_the_step(tmp_path: Path):
    ctx = TaskContext("t", tmp_path)
    with pytest.raises(
        SetupStepError, match=re.escape("setup step 0 (sleep) of task 't': bad parameters {}")
    ):
        run_steps([SetupStep("sleep", {})], None, ctx, phase="setup")


def test_placeholders_are_filled_in_strings_and_lists():
    cmd = ["python", "-c", "click({SCREEN_WIDTH_HALF}, {SCREEN_HEIGHT_HALF}); {SCREEN_WIDTH}x{SCREEN_HEIGHT}"]
    out = fill_placeholders(cmd, (1920, 1080), "pw")
    assert out[2] == "click(960, 540); 1920x1080"
    assert fill_placeholders("echo {CLIENT_PASSWORD} | sudo -S x", (1, 1), "pw") == "echo pw | sudo -S x"


def test_run_config_rejects_bad_values():
    with pytest.raises(ValueError, match="max_sleep_s must be >= 0"):
        TaskRunConfig(max_sleep_s=-1)


# --- bundled suite ---


@pytest.mark.parametrize("task_id", BUNDLED_TASK_IDS)
def test_bundled_task_loads_and_its_files_resolve_from_the_cache(task_id: str, tmp_path: Path):
    task = load_task(task_id)
    assert isinstance(task, Task) and task.id == task_id and task.supported
    materialize_bundled_files(tmp_path)
    cache = FileCache((tmp_path,))
    for step in task.config:
        for f in step.parameters.get("files", []) if step.type == "download" else []:
            assert cache.resolve(f["url"], task_id, Path(f["path"]).name).stat().st_size > 0
    for check in task.evaluator.checks:
        if check.expected is not None and check.expected.type == "cloud_file":
            assert cache.resolve(check.expected.config["path"], task_id).is_file()


@pytest.mark.parametrize("task_id", BUNDLED_TASK_IDS)
@pytest.mark.parametrize("variant", ["oracle", "wrong"])
def test_bundled_solutions_are_valid_computer_use_calls(task_id: str, variant: str):
    actions = bundled_solution(task_id, variant)
    assert actions and actions[-1]["arguments"] == {"action": "terminate", "status": "success"}
    for call in actions:
        parsed = parse_action(call, (1920, 1080))
        assert isinstance(parsed, GuiAction), parsed


@pytest.mark.parametrize("task_id", BUNDLED_TASK_IDS)
def test_oracle_and_wrong_differ(task_id: str):
    assert bundled_solution(task_id, "oracle") != bundled_solution(task_id, "wrong")


def test_unknown_bundled_task_is_not_found():
    with pytest.raises(TaskNotFound, match=re.escape("Did you mean 'calc-sum-column'")):
        load_task("calc-sum-colum")
    with pytest.raises(TaskNotFound):
        bundled_solution("nope")
