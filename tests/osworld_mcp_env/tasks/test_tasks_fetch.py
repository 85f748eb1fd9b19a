"""``osworld-mcp tasks fetch`` against a loopback server speaking the Hub's and plain HTTP's wire format.

The Hub urls go through huggingface_hub with ``HF_ENDPOINT`` pointed at the server
(``hub_server.py``); the plain ones through urllib. Nothing is timed: the slow
server holds its body until the test releases it, after the fetch has given up.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path

import openpyxl
import pytest
from hub_server import COMMIT, Site, serve
from osworld_mcp_env.cli import main
from osworld_mcp_env.errors import FetchError
from osworld_mcp_env.tasks.cache import FileCache
from osworld_mcp_env.tasks.coverage import NEEDS_CACHE, RUNNABLE_WITH_CACHE, assess
from osworld_mcp_env.tasks.fetch import MANIFEST_NAME, FetchConfig, Outcome, fetch, plan_jobs
from osworld_mcp_env.tasks.fetch.hub import parse_hub_url
from osworld_mcp_env.tasks.fetch.run import cache_lock
from osworld_mcp_env.tasks.loader import read_task_file
from task_data import OSWORLD_EXAMPLES

CALC_TASK = "eb03d19a-b88d-4de4-8a64-ca0ac66f426b"
CALC_DIR = f"libreoffice_calc/{CALC_TASK}"


@pytest.fixture
def site() -> Iterator[Site]:
    site = Site()
    running = serve(site)
    yield site
    site.release.set()
    running.stop()


def write_task(examples: Path, task_id: str, urls: list[str], domain: str = "os") -> Path:
    """A task that downloads ``urls`` into the home folder."""
    folder = examples / domain
    folder.mkdir(parents=True, exist_ok=True)
    files = [{"url": u, "path": f"/home/user/{i}_{u.rsplit('/', 1)[-1]}"} for i, u in enumerate(urls)]
    task = {
        "id": task_id,
        "instruction": "x",
        "config": [{"type": "download", "parameters": {"files": files}}],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "rule", "rules": "a"},
            "expected": {"type": "rule", "rules": {"expected": "a"}},
        },
    }
    path = folder / f"{task_id}.json"
    path.write_text(json.dumps(task))
    return path


def run_cli(args: list[str], site: Site, **env: str) -> int:
    return main(["tasks", "fetch", *args], {"HF_ENDPOINT": site.base, **env})


def manifest(cache: Path) -> dict:
    return json.loads((cache / MANIFEST_NAME).read_text())["files"]


def leftovers(cache: Path) -> list[Path]:
    """Temporary files of ours or of huggingface_hub's (a half-written file would be one)."""
    return [p for p in cache.rglob("*") if p.name.endswith((".part", ".incomplete"))]


def test_hub_files_land_where_the_cache_looks_verified_and_recorded(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """A regular file (blob ETag) and an LFS file (302 to storage, sha256 ETag), HF_ENDPOINT and HF_TOKEN."""
    site.hub_files = {"os/t1/notes.txt": b"hello\n", "os/t1/big file.bin": bytes(range(256)) * 4000}
    site.lfs = {"os/t1/big file.bin"}
    urls = [site.hub_url(p) for p in site.hub_files]
    write_task(tmp_path / "examples", "t1", urls)
    cache = tmp_path / "cache"
    assert (
        run_cli(["--examples", str(tmp_path / "examples"), "--cache", str(cache)], site, HF_TOKEN="hf_x") == 0
    )
    for path, data in site.hub_files.items():
        assert (cache / path).read_bytes() == data
        record = manifest(cache)[site.hub_url(path)]
        assert record["sha256"] == hashlib.sha256(data).hexdigest() and record["size"] == len(data)
        assert record["source"] == "hub" and record["commit"] == COMMIT and record["path"] == path
    # The token reached the server; the download was pinned to the commit the first HEAD resolved.
    assert all(
        r.headers.get("authorization") == "Bearer hf_x" for r in site.requests if "/resolve/" in r.path
    )
    assert any(f"/resolve/{COMMIT}/" in r.path for r in site.requests)
    out = capsys.readouterr().out
    assert "fetched" in out and "2" in out.split("fetched", 1)[1].split("\n", 1)[0]
    # The env's cache lookup finds both, for the task and the destination names it uses.
    task = read_task_file(tmp_path / "examples" / "os" / "t1.json")
    for url, dest in [(u, f"{i}_{u.rsplit('/', 1)[-1]}") for i, u in enumerate(urls)]:
        assert FileCache((cache,)).resolve(url, task.id, dest).read_bytes() in site.hub_files.values()
    assert leftovers(cache) == []

    # Run again: everything is cached, nothing is requested.
    before = len(site.requests)
    assert run_cli(["--examples", str(tmp_path / "examples"), "--cache", str(cache)], site) == 0
    assert len(site.requests) == before
    assert "cached" in capsys.readouterr().out


def test_an_interrupted_hub_download_resumes_from_where_it_stopped(site: Site, tmp_path: Path):
    """The storage server cuts the first GET half-way; huggingface_hub asks for the rest with a Range.

    huggingface_hub writes in 10 MiB chunks, so the file is larger than two of them:
    the cut falls after one chunk is on disk.
    """
    data = hashlib.sha256(b"seed").digest() * (24 * 1024 * 1024 // 32)
    site.hub_files = {"vlc/t2/video.mp4": data}
    site.lfs = {"vlc/t2/video.mp4"}
    site.cut_once = {hashlib.sha256(data).hexdigest()}
    write_task(tmp_path / "examples", "t2", [site.hub_url("vlc/t2/video.mp4")])
    cache = tmp_path / "cache"
    assert run_cli(["--examples", str(tmp_path / "examples"), "--cache", str(cache)], site) == 0
    assert (cache / "vlc/t2/video.mp4").read_bytes() == data
    ranges = [r.headers.get("range") for r in site.requests if r.path.startswith("/cdn/")]
    assert ranges[0] is None and len(ranges) == 2
    resumed_at = int(ranges[1].removeprefix("bytes=").removesuffix("-"))
    assert 0 < resumed_at <= len(data) // 2


def test_failures_are_listed_with_their_reason_and_leave_nothing_behind(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    """A Hub 404, a plain 404 and a body shorter than its Content-Length each fail apart; the rest arrives."""
    site.plain = {"ok.csv": b"a,b\n1,2\n"}
    urls = [
        site.hub_url("os/t3/missing.xlsx"),
        f"{site.base}/missing/file.docx",
        f"{site.base}/truncated/short.pptx",
        f"{site.base}/plain/ok.csv",
    ]
    write_task(tmp_path / "examples", "t3", urls)
    cache = tmp_path / "cache"
    assert run_cli(["--examples", str(tmp_path / "examples"), "--cache", str(cache)], site) == 1
    why = capsys.readouterr().out.split("why:", 1)[1]
    assert "missing.xlsx\n    HTTP 404" in why
    assert "file.docx\n    HTTP 404 Not Found" in why
    assert "short.pptx\n    truncated: 100 of 1000 bytes" in why
    # The good file is fetched and recorded with its checksum; the failed ones are nowhere.
    host = site.base.removeprefix("http://")
    assert (cache / host / "plain/ok.csv").read_bytes() == b"a,b\n1,2\n"
    assert manifest(cache)[urls[3]]["sha256"] == hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    assert set(manifest(cache)) == {urls[3]}
    assert not any(cache.rglob("short.pptx")) and not any(cache.rglob("missing.xlsx"))
    assert leftovers(cache) == []


def test_a_silent_server_fails_at_the_timeout(site: Site, tmp_path: Path):
    """The server holds its answer until the test releases it, which it does only after the fetch gave up."""
    jobs = plan_jobs(
        [read_task_file(write_task(tmp_path / "ex", "t10", [f"{site.base}/slow/never.odt"]))], tmp_path
    )
    report = fetch(jobs, tmp_path, FetchConfig(timeout_s=0.5))
    site.release.set()
    [result] = report.results
    # Headers, then silence: the body read times out (on a busy machine perhaps the wait for the headers).
    assert result.outcome == Outcome.FAILED
    assert result.reason.startswith(("the server sent nothing for 0.5 s", "no answer within 0.5 s")), (
        result.reason
    )
    assert not any(tmp_path.rglob("never.odt")) and leftovers(tmp_path) == []


def test_a_hub_file_that_does_not_match_its_etag_is_refused(site: Site, tmp_path: Path):
    """The Hub says one SHA-256, the storage sends other bytes: nothing is kept, nothing recorded."""
    site.hub_files = {"gimp/t11/pic.png": b"real bytes"}
    site.lfs = {"gimp/t11/pic.png"}
    site.wrong_etag = {"gimp/t11/pic.png"}
    write_task(tmp_path / "examples", "t11", [site.hub_url("gimp/t11/pic.png")])
    cache = tmp_path / "cache"
    jobs = plan_jobs([read_task_file(tmp_path / "examples" / "os" / "t11.json")], cache)
    report = fetch(jobs, cache, FetchConfig(hf_endpoint=site.base))
    [result] = report.results
    assert result.outcome == Outcome.FAILED and result.reason.startswith("checksum mismatch: sha256 ")
    assert not (cache / "gimp/t11/pic.png").exists()
    assert not (cache / MANIFEST_NAME).exists()


def test_the_size_limit_refuses_a_larger_body(site: Site, tmp_path: Path):
    site.plain = {"big.bin": b"y" * 5000}
    jobs = plan_jobs(
        [read_task_file(write_task(tmp_path / "ex", "t4", [f"{site.base}/plain/big.bin"]))], tmp_path
    )
    report = fetch(jobs, tmp_path, FetchConfig(max_bytes=4096))
    assert [r.outcome for r in report.results] == [Outcome.FAILED] and not report.ok
    assert report.results[0].reason == "5000 bytes announced, over the 4096-byte limit"
    assert not any(tmp_path.rglob("big.bin"))


def test_dry_run_says_what_and_how_much_and_writes_nothing(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    site.hub_files = {"os/t5/a.xlsx": b"z" * 1500}
    site.plain = {"b.txt": b"q" * 500}
    write_task(tmp_path / "examples", "t5", [site.hub_url("os/t5/a.xlsx"), f"{site.base}/plain/b.txt"])
    cache = tmp_path / "cache"
    assert run_cli(["--examples", str(tmp_path / "examples"), "--cache", str(cache), "--dry-run"], site) == 0
    out = capsys.readouterr().out
    assert "would fetch" in out and "2.0 KB" in out and "dry run: nothing written" in out
    assert not (cache / MANIFEST_NAME).exists() and not (cache / "os").exists()
    assert {r.method for r in site.requests} == {"HEAD"}


def test_targets_pick_domains_or_task_ids_and_unknown_ones_are_usage_errors(
    site: Site, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    site.plain = {"one": b"1", "two": b"2"}
    write_task(tmp_path / "examples", "t6", [f"{site.base}/plain/one"], domain="vlc")
    write_task(tmp_path / "examples", "t7", [f"{site.base}/plain/two"], domain="gimp")
    cache = tmp_path / "cache"
    assert run_cli(["vlc", "--examples", str(tmp_path / "examples"), "--cache", str(cache)], site) == 0
    host = site.base.removeprefix("http://")
    assert (cache / host / "plain/one").exists() and not (cache / host / "plain/two").exists()
    assert run_cli(["t7", "--examples", str(tmp_path / "examples"), "--cache", str(cache)], site) == 0
    assert (cache / host / "plain/two").exists()
    capsys.readouterr()
    assert run_cli(["vlcc", "--examples", str(tmp_path / "examples"), "--cache", str(cache)], site) == 2
    assert "Did you mean 'vlc'?" in capsys.readouterr().err
    # No cache folder to write to: a usage error.
    assert run_cli(["--examples", str(tmp_path / "examples")], site) == 2


def test_a_recorded_file_whose_size_changed_is_fetched_again(site: Site, tmp_path: Path):
    site.plain = {"f.txt": b"original"}
    url = f"{site.base}/plain/f.txt"
    jobs = plan_jobs([read_task_file(write_task(tmp_path / "ex", "t8", [url]))], tmp_path / "c")
    assert fetch(jobs, tmp_path / "c", FetchConfig()).results[0].outcome == Outcome.FETCHED
    assert jobs[0].target is not None
    jobs[0].target.write_bytes(b"damaged, longer")
    assert fetch(jobs, tmp_path / "c", FetchConfig()).results[0].outcome == Outcome.FETCHED
    assert jobs[0].target.read_bytes() == b"original"
    assert fetch(jobs, tmp_path / "c", FetchConfig()).results[0].outcome == Outcome.CACHED


def test_a_url_whose_path_climbs_out_of_the_cache_is_refused(tmp_path: Path):
    url = "http://127.0.0.1:9/a/%2e%2e/%2e%2e/%2e%2e/escaped.txt"
    jobs = plan_jobs([read_task_file(write_task(tmp_path / "ex", "t9", [url]))], tmp_path / "c")
    report = fetch(jobs, tmp_path / "c", FetchConfig())
    assert report.results[0].outcome == Outcome.FAILED and "leaves the cache" in report.results[0].reason
    assert not (tmp_path / "escaped.txt").exists()


def test_a_second_fetch_into_the_same_cache_is_refused_and_a_damaged_manifest_named(tmp_path: Path):
    jobs = plan_jobs(
        [read_task_file(write_task(tmp_path / "ex", "t12", ["http://127.0.0.1:9/a.txt"]))], tmp_path
    )
    with cache_lock(tmp_path), pytest.raises(FetchError, match="another fetch is writing to"):
        fetch(jobs, tmp_path, FetchConfig())
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(FetchError, match=r"is not a fetch manifest .*move it away"):
        fetch(jobs, tmp_path, FetchConfig())


def test_only_huggingface_resolve_urls_go_to_the_hub():
    ref = parse_hub_url(
        "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/a/b%20c.xlsx"
    )
    assert ref is not None and (ref.repo_type, ref.repo_id, ref.revision, ref.filename) == (
        "dataset",
        "xlangai/ubuntu_osworld_file_cache",
        "main",
        "a/b c.xlsx",
    )
    assert parse_hub_url("https://huggingface.co/org/model/resolve/v1/w.bin").repo_type == "model"  # type: ignore[union-attr]
    assert parse_hub_url("https://example.com/datasets/a/b/resolve/main/x") is None
    assert parse_hub_url("http://huggingface.co/datasets/a/b/resolve/main/x") is None


def calc_stand_ins() -> tuple[bytes, bytes]:
    """A generated table in B2:F5 standing for the task's spreadsheet, and its gold (transposed at B8)."""
    values = [[10 * r + c for c in range(1, 6)] for r in range(1, 5)]
    book = openpyxl.Workbook()
    sheet = book.active
    for r, row in enumerate(values):
        for c, v in enumerate(row):
            sheet.cell(row=2 + r, column=2 + c, value=v)
    start = io.BytesIO()
    book.save(start)
    for r, row in enumerate(values):
        for c, v in enumerate(row):
            sheet.cell(row=8 + c, column=2 + r, value=v)
    gold = io.BytesIO()
    book.save(gold)
    return start.getvalue(), gold.getvalue()


def serve_calc_task(site: Site) -> None:
    start, gold = calc_stand_ins()
    site.hub_files = {
        f"{CALC_DIR}/Students_Class_Subject_Marks.xlsx": start,
        f"{CALC_DIR}/Students_Class_Subject_Marks_gold.xlsx": gold,
    }
    site.lfs = set(site.hub_files)


def test_a_real_calc_task_is_runnable_with_the_cache_fetch_filled(site: Site, tmp_path: Path):
    """OSWorld's own task JSON, as it is: its download and its gold cloud_file come from the fetched cache."""
    serve_calc_task(site)
    task_file = OSWORLD_EXAMPLES / "libreoffice_calc" / f"{CALC_TASK}.json"
    cache = tmp_path / "cache"
    assert assess(task_file).status == NEEDS_CACHE
    code = run_cli([CALC_TASK, "--examples", str(OSWORLD_EXAMPLES), "--cache", str(cache)], site)
    assert code == 0
    verdict = assess(task_file, FileCache((cache,)))
    assert verdict.status == RUNNABLE_WITH_CACHE, verdict.detail
    assert main(["tasks", "--coverage", "--examples", str(OSWORLD_EXAMPLES), "--cache", str(cache)], {}) == 0
