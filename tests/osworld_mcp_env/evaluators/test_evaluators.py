"""Metrics on real files, and the evaluator's conj / infeasible / error semantics (no desktop)."""

from __future__ import annotations

import re
from pathlib import Path

import docx
import openpyxl
import pytest
from osworld_mcp_env.errors import EvaluationError, TaskError
from osworld_mcp_env.evaluators import METRICS, evaluate
from osworld_mcp_env.tasks import TaskContext, TaskRunConfig, load_task, materialize_bundled_files
from osworld_mcp_env.tasks.bundled import CALC_NUMBERS, WRITER_PARAGRAPHS
from task_data import needs_soffice, soffice_convert


def metric(name: str):
    return METRICS.get(name).fn


def xlsx(path: Path, rows, *, title: str = "Sheet1", freeze: str | None = None) -> str:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = title
    for row in rows:
        ws.append(list(row))
    if freeze:
        ws.freeze_panes = freeze
    wb.save(path)
    return str(path)


def docx_file(path: Path, paragraphs) -> str:
    doc = docx.Document()
    for p in paragraphs:
        doc.add_paragraph(p)
    doc.save(path)
    return str(path)


SHEET_DATA = {"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}
GOLD_ROWS = [[CALC_NUMBERS[0], sum(CALC_NUMBERS)], *[[n] for n in CALC_NUMBERS[1:]]]


# --- compare_table ---------------------------------------------------------------------------------------


def test_compare_table_right_and_wrong_xlsx(tmp_path: Path):
    gold = xlsx(tmp_path / "gold.xlsx", GOLD_ROWS)
    right = xlsx(tmp_path / "right.xlsx", [[float(v) for v in r] for r in GOLD_ROWS])
    wrong = xlsx(tmp_path / "wrong.xlsx", [[12, 54], *[[n] for n in CALC_NUMBERS[1:]]])
    assert metric("compare_table")(right, gold, **SHEET_DATA) == 1.0
    assert metric("compare_table")(wrong, gold, **SHEET_DATA) == 0.0


def test_compare_table_missing_or_unreadable_result_scores_zero(tmp_path: Path):
    gold = xlsx(tmp_path / "gold.xlsx", GOLD_ROWS)
    (tmp_path / "notxlsx.xlsx").write_text("plain text")
    assert metric("compare_table")(None, gold, **SHEET_DATA) == 0.0
    assert metric("compare_table")(str(tmp_path / "absent.xlsx"), gold, **SHEET_DATA) == 0.0
    assert metric("compare_table")(str(tmp_path / "notxlsx.xlsx"), gold, **SHEET_DATA) == 0.0


def test_compare_table_unreadable_expected_is_an_evaluation_error(tmp_path: Path):
    right = xlsx(tmp_path / "r.xlsx", GOLD_ROWS)
    with pytest.raises(EvaluationError, match=r"expected file .* is unreadable"):
        metric("compare_table")(right, str(tmp_path / "absent.xlsx"), **SHEET_DATA)


def test_compare_table_ignores_trailing_empty_cells_but_not_inner_ones(tmp_path: Path):
    gold = xlsx(tmp_path / "g.xlsx", [[1, 2], [3, None]])
    padded = xlsx(tmp_path / "p.xlsx", [[1, 2, None], [3, None, ""], [None, None, None]])
    shifted = xlsx(tmp_path / "s.xlsx", [[None, 1, 2], [None, 3]])
    assert metric("compare_table")(padded, gold, **SHEET_DATA) == 1.0
    assert metric("compare_table")(shifted, gold, **SHEET_DATA) == 0.0


def test_compare_table_sheet_name_and_index_forms(tmp_path: Path):
    gold = xlsx(tmp_path / "g.xlsx", [[1]], title="Data")
    same = xlsx(tmp_path / "s.xlsx", [[1]], title="Data")
    renamed = xlsx(tmp_path / "r.xlsx", [[1]], title="Other")
    names = {"rules": [{"type": "sheet_name"}]}
    by_name = {"rules": [{"type": "sheet_data", "sheet_idx0": "RNData", "sheet_idx1": "ENData"}]}
    assert metric("compare_table")(same, gold, **names) == 1.0
    assert metric("compare_table")(renamed, gold, **names) == 0.0
    assert metric("compare_table")(same, gold, **by_name) == 1.0
    assert metric("compare_table")(renamed, gold, **by_name) == 0.0  # the result lacks the sheet
    bad_idx = {"rules": [{"type": "sheet_data", "sheet_idx0": "XX0", "sheet_idx1": "EI0"}]}
    with pytest.raises(EvaluationError, match=re.escape("bad sheet index 'XX0'")):
        metric("compare_table")(same, gold, **bad_idx)


@needs_soffice
@pytest.mark.slow
def test_compare_table_on_files_saved_by_libreoffice(tmp_path: Path):
    """A formula typed in LibreOffice is compared by its cached value, as the calc task needs."""
    gold = xlsx(tmp_path / "gold.xlsx", GOLD_ROWS)
    for name, formula, want in (("right", "=SUM(A1:A5)", 1.0), ("wrong", "=SUM(A1:A4)", 0.0)):
        wb = openpyxl.Workbook()
        for n in CALC_NUMBERS:
            wb.active.append([n])
        wb.active["B1"] = formula
        src = tmp_path / "src" / f"{name}.xlsx"
        src.parent.mkdir(exist_ok=True)
        wb.save(src)
        out = soffice_convert(src, tmp_path / "out", "xlsx:Calc MS Excel 2007 XML", tmp_path / "profile")
        assert metric("compare_table")(str(out), gold, **SHEET_DATA) == want, name
        # Without LibreOffice's recalculation the formula has no cached value: it cannot pass.
        assert metric("compare_table")(str(src), gold, **SHEET_DATA) == 0.0


@needs_soffice
@pytest.mark.slow
def test_compare_docx_files_on_a_libreoffice_round_trip(tmp_path: Path):
    gold = docx_file(tmp_path / "gold.docx", [p.replace("failure", "success") for p in WRITER_PARAGRAPHS])
    src = tmp_path / "src"
    src.mkdir()
    edited = docx_file(src / "edited.docx", [p.replace("failure", "success") for p in WRITER_PARAGRAPHS])
    untouched = docx_file(src / "untouched.docx", WRITER_PARAGRAPHS)
    profile = tmp_path / "profile"
    out_ok = soffice_convert(Path(edited), tmp_path / "out", "docx:MS Word 2007 XML", profile)
    out_bad = soffice_convert(Path(untouched), tmp_path / "out", "docx:MS Word 2007 XML", profile)
    assert metric("compare_docx_files")(str(out_ok), gold) == 1.0
    assert metric("compare_docx_files")(str(out_bad), gold) == 0.0
    assert metric("compare_docx_files")(str(out_ok), gold, ignore_blanks=False) == 1.0


# --- text metrics ---


def test_exact_match_cases():
    assert metric("exact_match")("100\n", {"expected": "100\n"}) == 1.0
    assert metric("exact_match")("100", {"expected": "100\n"}) == 0.0
    assert metric("exact_match")(None, {"expected": "100\n"}) == 0.0
    with pytest.raises(EvaluationError, match="expected rules with one of"):
        metric("exact_match")("x", {"wrong_key": 1})


def test_check_include_exclude_cases():
    rules = {"include": ["Evaluation successful."], "exclude": ["error"]}
    assert metric("check_include_exclude")("...\nEvaluation successful.\n", rules) == 1.0
    assert metric("check_include_exclude")("Evaluation successful. error", rules) == 0.0
    assert metric("check_include_exclude")("nothing", rules) == 0.0
    assert metric("check_include_exclude")(None, rules) == 0.0
    assert metric("check_include_exclude")("", {"include": [], "exclude": ["x"]}) == 1.0


def test_compare_text_file_options(tmp_path: Path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("Hello   World\n")
    b.write_text("hello world")
    assert metric("compare_text_file")(str(a), str(b)) == 0.0
    assert metric("compare_text_file")(str(a), str(b), ignore_blanks=True, ignore_case=True) == 1.0
    assert metric("compare_text_file")(str(tmp_path / "none"), str(b)) == 0.0
    with pytest.raises(EvaluationError):
        metric("compare_text_file")(str(a), str(tmp_path / "none"))


def test_csv_metrics(tmp_path: Path):
    res, gold = tmp_path / "r.csv", tmp_path / "g.csv"
    res.write_text("name,qty\nApple,3 \nPear,5\n")
    gold.write_text("name,qty\napple,3\npear,5\n")
    assert metric("compare_csv")(str(res), str(gold)) == 0.0
    assert metric("compare_csv")(str(res), str(gold), strict=False, ignore_case=True) == 1.0
    rules = {"expect": [{"name": "Pear", "qty": "5"}], "unexpect": [{"name": "Plum"}]}
    assert metric("check_csv")(str(res), rules) == 1.0
    assert metric("check_csv")(str(res), {"expect": [{"name": "Plum"}]}) == 0.0
    assert metric("check_csv")(str(res), {"expect": [], "unexpect": [{"name": "Apple"}]}) == 0.0


def test_file_contains_and_check_line_number(tmp_path: Path):
    f = tmp_path / "sar.txt"
    f.write_text("CPU %user %idle\n10:00:01 all 1 99\n10:00:02 all 2 98\n")
    assert metric("file_contains")(str(f), {"expected": ["CPU", "%idle"]}) == 1.0
    assert metric("file_contains")(str(f), {"expected": ["%steal"]}) == 0.0
    assert metric("check_line_number")(str(f), {"expected": "2"}) == 1.0
    assert metric("check_line_number")(str(f), {"expected": "31"}) == 0.0


def test_compare_docx_files_options(tmp_path: Path):
    gold = docx_file(tmp_path / "g.docx", ["One", "Two"])
    swapped = docx_file(tmp_path / "s.docx", ["Two", "one"])
    assert metric("compare_docx_files")(swapped, gold) == 0.0
    # OSWorld sorts paragraphs before lowering case: ["Two", "one"] stays in that order ("T" < "o") while
    # the gold sorts to ["One", "Two"]; lowered, "two one" != "one two" -> 0.
    assert metric("compare_docx_files")(swapped, gold, ignore_order=True, ignore_case=True) == 0.0
    same_case = docx_file(tmp_path / "c.docx", ["Two", "One"])
    assert metric("compare_docx_files")(same_case, gold, ignore_order=True) == 1.0
    (tmp_path / "junk.docx").write_text("no zip")
    # OSWorld returns 0 when either document fails to open (it cannot tell which one).
    assert metric("compare_docx_files")(str(tmp_path / "junk.docx"), gold) == 0.0
    assert metric("compare_docx_files")(gold, str(tmp_path / "junk.docx")) == 0.0


# --- the evaluator ---


def rule_task(funcs, results, expected, conj="and", **extra):
    ev = {
        "func": funcs,
        "conj": conj,
        "result": [{"type": "rule", "rules": r} for r in results],
        "expected": [{"type": "rule", "rules": {"expected": e}} for e in expected],
        **extra,
    }
    return load_task({"id": "t", "instruction": "x", "config": [], "evaluator": ev})


@pytest.mark.parametrize(
    ("conj", "results", "score", "ran"),
    [
        ("and", ["a", "b"], 1.0, 2),
        ("and", ["x", "b"], 0.0, 1),  # stops at the first 0
        ("or", ["x", "b"], 1.0, 2),
        ("or", ["a", "x"], 1.0, 1),  # stops at the first 1
        ("or", ["x", "y"], 0.0, 2),
    ],
)
def test_conj_semantics(tmp_path: Path, conj, results, score, ran):
    task = rule_task(["exact_match", "exact_match"], results, ["a", "b"], conj)
    verdict = evaluate(task, None, TaskContext("t", tmp_path))
    assert verdict.score == score and len(verdict.checks) == ran


def test_infeasible_scores_one_only_when_declared(tmp_path: Path):
    task = load_task({"id": "t", "instruction": "x", "config": [], "evaluator": {"func": "infeasible"}})
    ctx = TaskContext("t", tmp_path)
    assert evaluate(task, None, ctx, declared_infeasible=True).score == 1.0
    assert evaluate(task, None, ctx, declared_infeasible=False).score == 0.0
    feasible = rule_task(["exact_match"], ["a"], ["a"])
    assert evaluate(feasible, None, ctx).score == 1.0
    assert evaluate(feasible, None, ctx, declared_infeasible=True).score == 0.0


def test_cloud_file_missing_from_the_cache_is_an_evaluation_error_not_a_zero(tmp_path: Path):
    task = load_task("calc-sum-column")
    ctx = TaskContext(task.id, tmp_path / "run", TaskRunConfig(cache_roots=(tmp_path / "empty",)))
    ev = task.evaluator
    only_expected = load_task(
        {
            "id": task.id,
            "instruction": "x",
            "config": [],
            "evaluator": {
                "func": "compare_table",
                "result": {"type": "rule", "rules": None},
                "expected": ev.checks[0].expected.to_dict(),
                "options": dict(ev.checks[0].options),
            },
        }
    )
    with pytest.raises(EvaluationError, match=re.escape("numbers_gold.xlsx")):
        evaluate(only_expected, None, ctx)


def test_cloud_file_and_cache_file_getters_feed_metrics(tmp_path: Path):
    cache = tmp_path / "cache"
    materialize_bundled_files(cache)
    ctx = TaskContext("calc-sum-column", tmp_path / "run", TaskRunConfig(cache_roots=(cache,)))
    ctx.work_dir.mkdir(parents=True)
    (ctx.work_dir / "out.txt").write_text("DIR_OK\n")
    url = "https://bundled.osworld-mcp-env.invalid/calc-sum-column/numbers_gold.xlsx"
    task = load_task(
        {
            "id": "calc-sum-column",
            "instruction": "x",
            "config": [],
            "evaluator": {
                "func": ["compare_table", "file_contains"],
                "result": [
                    {"type": "cloud_file", "path": url, "dest": "copy.xlsx"},
                    {"type": "cache_file", "path": "out.txt"},
                ],
                "expected": [
                    {"type": "cloud_file", "path": url, "dest": "gold.xlsx"},
                    {"type": "rule", "rules": {"expected": ["DIR_OK"]}},
                ],
                "options": [SHEET_DATA, {}],
            },
        }
    )
    assert evaluate(task, None, ctx).score == 1.0


def test_metric_that_chokes_on_the_task_rules_is_an_evaluation_error(tmp_path: Path):
    task = rule_task(["check_line_number"], ["/nonexistent"], ["not a number"])
    (tmp_path / "f.txt").write_text("x")
    bad = load_task(
        {
            "id": "t",
            "instruction": "x",
            "config": [],
            "evaluator": {
                "func": "check_line_number",
                "result": {"type": "rule", "rules": str(tmp_path / "f.txt")},
                "expected": {"type": "rule", "rules": {"expected": "many"}},
            },
        }
    )
    assert evaluate(task, None, TaskContext("t", tmp_path)).score == 0.0  # the result file is missing
    with pytest.raises(
        EvaluationError, match=re.escape("metric 'check_line_number' failed on its inputs: ValueError")
    ):
        evaluate(bad, None, TaskContext("t", tmp_path))


def test_unsupported_task_cannot_be_evaluated(tmp_path: Path):
    task = load_task({"id": "t", "instruction": "x", "evaluator": {"func": "compare_nothing"}}, strict=False)
    with pytest.raises(TaskError, match="not supported here"):
        evaluate(task, None, TaskContext("t", tmp_path))
