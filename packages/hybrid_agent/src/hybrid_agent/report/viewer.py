"""The HTML trajectory viewer: one page per run directory, beside its ``episodes/`` folder.

An index lists every episode (task, domain, run, score or error) with filters on
outcome, domain and error label; per episode and step: the screenshot the model saw
with a marker where the GUI action clicked (screen pixels from the step record, drawn
as a CSS overlay at ``x / width``, ``y / height`` of the image, so it scales with it),
the model output, the parsed call (repairs, or the parse error), the action sent, the
evidence, the retention decisions, the tools shown and the tokens.

Screenshots are linked as files (``episodes/<key>/step_000.png``, loaded lazily)
rather than inlined: a 309-task x 5-run study has ~23,000 of them. The page needs
the run directory beside it, as written. The filters are a few lines of script
(the query string sets them: ``viewer.html?outcome=errored&domain=os``); without
script every episode shows.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hybrid_agent.recorder import EPISODES, EpisodeRecord, episode_key, iter_episodes, read_run_config
from hybrid_agent.report.summary import run_label

_STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#222}
.episode{border:1px solid #bbb;border-radius:6px;margin:1em 0;padding:.5em 1em}
.step{display:grid;grid-template-columns:minmax(200px,480px) 1fr;gap:1em;
  border-top:1px solid #ddd;padding:.6em 0}
.step img{max-width:100%;border:1px solid #999}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.4em;margin:.2em 0;font-size:12px}
.ok{color:#070}.bad{color:#b00}.meta{color:#555;font-size:13px}
.shot{position:relative;display:inline-block;max-width:100%;line-height:0}
.shot img{display:block}
.marker{position:absolute;width:20px;height:20px;margin:-10px 0 0 -10px;box-sizing:border-box;
  border:3px solid #f0f;border-radius:50%;pointer-events:none}
.marker.end{border-style:dotted}
#index{border-collapse:collapse;font-size:13px}#index td,#index th{border:1px solid #ccc;padding:2px 6px}
.filters{margin:.6em 0}.filters label{margin-right:1em}
"""
_MARKED = {"left_click", "right_click", "middle_click", "double_click", "triple_click", "mouse_move"}
_MARKED |= {"left_click_drag", "scroll", "hscroll"}
# Filters: a control per data attribute of the episodes; the query string sets the initial choice.
_SCRIPT = """
const controls = [...document.querySelectorAll('.filters select')];
function apply() {
  let shown = 0;
  const episodes = document.querySelectorAll('[data-episode]');
  for (const el of episodes) {
    const ok = controls.every(c => c.value === '' || el.dataset[c.name] === c.value);
    el.hidden = !ok;
    if (ok && el.tagName === 'TR') shown++;
  }
  document.getElementById('shown').textContent = shown;
}
const query = new URLSearchParams(location.search);
for (const c of controls) {
  if (query.has(c.name)) c.value = query.get(c.name);
  c.addEventListener('change', apply);
}
apply();
"""


def _esc(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return html.escape(text)


def _png_size(path: Path) -> tuple[int, int] | None:
    """Width and height from a PNG's header (no decoding: a page may link thousands)."""
    with path.open("rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def _markers(action: dict[str, Any] | None, size: tuple[int, int]) -> str:
    """Where a GUI action pointed (``coordinate``; a drag also its ``start_coordinate``)."""
    arguments = (action or {}).get("arguments") or {}
    if (action or {}).get("name") != "computer_use" or arguments.get("action") not in _MARKED:
        return ""
    end = "end" if "start_coordinate" in arguments else "at"
    points = [("start", arguments.get("start_coordinate")), (end, arguments.get("coordinate"))]
    out = []
    for kind, point in points:
        if isinstance(point, list | tuple) and len(point) == 2:
            x, y = (100 * float(point[0]) / size[0], 100 * float(point[1]) / size[1])
            title = f"{arguments['action']} {kind} ({point[0]}, {point[1]})"
            out.append(
                f"<span class='marker {kind}' data-x='{point[0]}' data-y='{point[1]}' title='{_esc(title)}' "
                f"style='left:{x:.3f}%;top:{y:.3f}%'></span>"
            )
    return "".join(out)


def _image(run_dir: Path, page_dir: Path, step: dict[str, Any]) -> str:
    relative = step.get("screenshot")
    if not relative:
        return "<div class='meta'>(no screenshot)</div>"
    path = run_dir / EPISODES / relative
    size = _png_size(path) if path.exists() else None
    if size is None:
        return f"<div class='meta'>(missing {_esc(relative)})</div>"
    url = quote(Path(os.path.relpath(path, page_dir)).as_posix())
    return (
        f"<div class='shot'><img alt='step screenshot' loading='lazy' src='{url}' "
        f"width='{size[0]}' height='{size[1]}' style='max-width:100%;height:auto'>"
        f"{_markers(step.get('action'), size)}</div>"
    )


def _retention(plan: list[dict[str, Any]]) -> str:
    final = {r["frame"]: r for r in plan}
    return ", ".join(f"frame {i}: {r['form']} ({r['rule']})" for i, r in sorted(final.items()))


def _block(title: str, inner: str) -> str:
    return f"<div>{title}: {inner}</div>"


def _fold(title: str, inner: str) -> str:
    return f"<details><summary>{title}</summary>{inner}</details>"


def _step(run_dir: Path, page_dir: Path, step: dict[str, Any]) -> str:
    parse = step.get("parse") or {}
    if parse.get("ok"):
        call = parse["call"]
        repairs = ", ".join(parse.get("repairs") or []) or "none"
        parsed = f"<span class='ok'>call</span> <code class='call'>{_esc(call['name'])}</code>"
        parsed += f" repairs: {_esc(repairs)}"
    else:
        parsed = f"<span class='bad'>parse error [{_esc(parse.get('code', '?'))}]</span>"
        parsed += f" {_esc(parse.get('message', ''))}"
    tokens = step.get("tokens") or {}
    est = " (estimated)" if tokens.get("estimated") else ""
    rows = [
        f"<h4>Step {step['step']}</h4>",
        f"<div class='meta'>app: {_esc(step.get('app') or '-')} · tokens in {tokens.get('input')} / out "
        f"{tokens.get('output')}{est}</div>",
        f"<div>{parsed}</div>",
        f"<div>action sent: <pre>{_esc(step.get('action'))}</pre></div>" if step.get("action") else "",
        f"<div>evidence: <pre class='evidence'>{_esc(step.get('evidence'))}</pre></div>"
        if step.get("evidence")
        else "",
        f"<div class='bad'>env error: {_esc(step['env_error'])}</div>" if step.get("env_error") else "",
        _block(
            "retention", f"<span class='retention'>{_esc(_retention(step.get('retention') or []))}</span>"
        ),
        _fold("model output", f"<pre class='output'>{_esc(step.get('model_output', ''))}</pre>"),
        _fold("tool result shown", f"<pre>{_esc(step.get('tool_result_shown', ''))}</pre>"),
        f"<details><summary>{len(step.get('shown_tools') or [])} tools shown</summary>"
        f"<pre>{_esc(chr(10).join(step.get('shown_tools') or []))}</pre></details>",
    ]
    return (
        f"<div class='step' id='{_esc(step.get('screenshot') or step['step'])}'>"
        f"<div>{_image(run_dir, page_dir, step)}</div><div>{''.join(rows)}</div></div>"
    )


def _facets(record: EpisodeRecord) -> dict[str, str]:
    """What the filters read: outcome (success, failed, errored), domain and error label."""
    end = record.end
    error = end.get("error") or {}
    score = end.get("score")
    label = f"{error.get('type')}:{error['code']}" if error.get("code") else str(error.get("type") or "")
    outcome = "errored" if score is None else "success" if score >= 1.0 else "failed"
    return {"outcome": outcome, "domain": str(record.header.get("domain") or "unknown"), "error": label}


def _data(facets: dict[str, str]) -> str:
    return " ".join(f"data-{k}='{_esc(v)}'" for k, v in facets.items())


def _anchor(record: EpisodeRecord) -> str:
    return f"ep-{episode_key(record.task_id, record.run)}"


def _episode(run_dir: Path, page_dir: Path, record: EpisodeRecord) -> str:
    end = record.end
    if end.get("error"):
        error = end["error"]
        outcome = (
            f"<span class='bad'>error: {_esc(error.get('type'))}</span> {_esc(error.get('message', ''))}"
        )
    else:
        outcome = f"score <b class='score'>{end.get('score')}</b>"
    claimed = end.get("claimed_success")
    head = (
        f"<h3>{_esc(record.task_id)} · run {record.run} · {outcome}</h3>"
        f"<div class='meta'>domain {_esc(record.header.get('domain'))} · {len(record.steps)} steps · "
        f"claimed success: {_esc(claimed)} · {end.get('wall_s', 0):.1f} s</div>"
    )
    steps = "".join(_step(run_dir, page_dir, step) for step in record.steps)
    return (
        f"<section class='episode' id='{_anchor(record)}' data-episode {_data(_facets(record))}>{head}"
        f"<details open><summary>steps</summary>{steps}</details></section>"
    )


def _select(name: str, label: str, values: Iterable[str]) -> str:
    options = "".join(
        f"<option value='{_esc(v)}'>{_esc(v or '(none)')}</option>" for v in sorted(set(values))
    )
    return f"<label>{label} <select name='{name}'><option value=''>all</option>{options}</select></label>"


def _index(records: list[EpisodeRecord]) -> str:
    """The episode table and its filters (outcome, domain, error label)."""
    facets = [_facets(r) for r in records]
    filters = (
        "<div class='filters'>"
        + _select("outcome", "outcome", (f["outcome"] for f in facets))
        + _select("domain", "domain", (f["domain"] for f in facets))
        + _select("error", "error", (f["error"] for f in facets))
        + f"<span class='meta'><span id='shown'>{len(records)}</span> of {len(records)} shown</span></div>"
    )
    rows = "".join(
        f"<tr data-episode {_data(f)}><td><a href='#{_anchor(r)}'>{_esc(r.task_id)}</a></td>"
        f"<td>{_esc(f['domain'])}</td><td>{r.run}</td><td>{_esc(r.end.get('score'))}</td>"
        f"<td>{_esc(f['error'])}</td><td>{len(r.steps)}</td></tr>"
        for r, f in zip(records, facets, strict=True)
    )
    head = "<tr><th>task</th><th>domain</th><th>run</th><th>score</th><th>error</th><th>steps</th></tr>"
    return f"{filters}<table id='index'>{head}{rows}</table>"


def render_viewer(
    run_dir: str | Path, episodes: Iterable[EpisodeRecord] | None = None, page_dir: str | Path | None = None
) -> str:
    """The page of a run directory; screenshots are linked relative to ``page_dir`` (default: ``run_dir``)."""
    run_dir = Path(run_dir)
    page = Path(page_dir) if page_dir is not None else run_dir
    config = read_run_config(run_dir)
    records = list(episodes if episodes is not None else iter_episodes(run_dir))
    body = "".join(_episode(run_dir, page, record) for record in records)
    title = f"Trajectories: {run_label(config) if config else run_dir.name}"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_esc(title)}</h1><div class='meta'>config: <code>{_esc(config)}</code></div>"
        f"<p class='meta'>{len(records)} episodes</p>{_index(records)}{body}"
        f"<script>{_SCRIPT}</script></body></html>"
    )


def write_viewer(run_dir: str | Path, path: str | Path | None = None) -> Path:
    """Writes ``viewer.html`` into the run directory (or ``path``; its links then point back to the run)."""
    target = Path(path) if path else Path(run_dir) / "viewer.html"
    target.write_text(render_viewer(run_dir, page_dir=target.parent), encoding="utf-8")
    return target
