"""A self-contained HTML trajectory viewer: one page per run directory, screenshots inlined.

Per episode: task, run, score or error; per step: the screenshot the model saw,
the model output, the parsed call (repairs, or the parse error), the action sent,
the evidence, the retention decisions, the tools shown and the tokens. Static
HTML (``<details>`` to fold), no script and no external file, so it opens from
an e-mail attachment or a CI artifact.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hybrid_agent.recorder import EPISODES, EpisodeRecord, iter_episodes, read_run_config
from hybrid_agent.report.summary import run_label

_STYLE = """
body{font-family:sans-serif;margin:1.5em;color:#222}
.episode{border:1px solid #bbb;border-radius:6px;margin:1em 0;padding:.5em 1em}
.step{display:grid;grid-template-columns:minmax(200px,480px) 1fr;gap:1em;
  border-top:1px solid #ddd;padding:.6em 0}
.step img{max-width:100%;border:1px solid #999}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.4em;margin:.2em 0;font-size:12px}
.ok{color:#070}.bad{color:#b00}.meta{color:#555;font-size:13px}
"""


def _esc(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return html.escape(text)


def _image(run_dir: Path, relative: str | None) -> str:
    if not relative:
        return "<div class='meta'>(no screenshot)</div>"
    path = run_dir / EPISODES / relative
    if not path.exists():
        return f"<div class='meta'>(missing {_esc(relative)})</div>"
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"<img alt='step screenshot' src='data:image/png;base64,{data}'>"


def _retention(plan: list[dict[str, Any]]) -> str:
    final = {r["frame"]: r for r in plan}
    return ", ".join(f"frame {i}: {r['form']} ({r['rule']})" for i, r in sorted(final.items()))


def _block(title: str, inner: str) -> str:
    return f"<div>{title}: {inner}</div>"


def _fold(title: str, inner: str) -> str:
    return f"<details><summary>{title}</summary>{inner}</details>"


def _step(run_dir: Path, step: dict[str, Any]) -> str:
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
        f"<div>{_image(run_dir, step.get('screenshot'))}</div><div>{''.join(rows)}</div></div>"
    )


def _episode(run_dir: Path, record: EpisodeRecord) -> str:
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
    steps = "".join(_step(run_dir, step) for step in record.steps)
    return f"<section class='episode'>{head}<details open><summary>steps</summary>{steps}</details></section>"


def render_viewer(run_dir: str | Path, episodes: Iterable[EpisodeRecord] | None = None) -> str:
    """The HTML page of a run directory."""
    run_dir = Path(run_dir)
    config = read_run_config(run_dir)
    records = list(episodes if episodes is not None else iter_episodes(run_dir))
    body = "".join(_episode(run_dir, record) for record in records)
    title = f"Trajectories: {run_label(config) if config else run_dir.name}"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_esc(title)}</h1><div class='meta'>config: <code>{_esc(config)}</code></div>"
        f"<p class='meta'>{len(records)} episodes</p>{body}</body></html>"
    )


def write_viewer(run_dir: str | Path, path: str | Path | None = None) -> Path:
    """Writes ``viewer.html`` into the run directory (or ``path``)."""
    target = Path(path) if path else Path(run_dir) / "viewer.html"
    target.write_text(render_viewer(run_dir), encoding="utf-8")
    return target
