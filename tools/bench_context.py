"""Input tokens per task and p95 peak under each context policy (shaped like the study's Table 5).

Synthetic trajectories with a fixed seed, shaped like the study's runs: 1920x1080
screenshots, ~15 steps a task, 2-4 % of steps MCP calls (90 % of them executing,
30 % of those with zero effect), ~13 % of adjacent frames byte-identical, tool
results of 100-3000 characters, tools retrieved by BM25 top-18 from the study's
registry for the task's app. Every policy replays the *same* trajectories, so the
ratios isolate the context rule (the study's episodes also changed length).

Vision tokens are exact for Qwen3-VL (patch 16, merge 2, 64K..16M pixels). Text
tokens come from ``--tokenizer DIR`` (a local Hugging Face tokenizer, e.g. a
Qwen3-VL checkpoint) or, by default, from a byte-level BPE trained here on the
public tool schemas and task instructions: text counts then approximate Qwen's.

    uv run python tools/bench_context.py [--tasks 40] [--seed 10086] [--tokenizer DIR]

The registry and the task instructions come from the public OSWorld data shipped in the env
package, or ``$OSWORLD_DATA_DIR`` (``osworld_mcp_env.data_paths``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hybrid_agent.context import ContextConfig, build_context
from hybrid_agent.messages import count_images
from hybrid_agent.offline_tokenizer import train_qwen_tokenizer
from hybrid_agent.retention import RetentionConfig
from hybrid_agent.retrieval import BM25Retriever
from hybrid_agent.tokens import QWEN_CHATML_TEMPLATE, TaskTokens, TokenCounter, VisionGrid, summarize_tokens
from hybrid_agent.toolset import ToolSpec, load_registry
from hybrid_agent.trajectory import Call, Evidence, Frame, Observation, Step
from osworld_mcp_env.data_paths import osworld_data
from PIL import Image

POLICIES: list[tuple[str, RetentionConfig]] = [
    ("win-4", RetentionConfig(window=4)),
    ("win-2", RetentionConfig(window=2)),
    ("win-4+drop", RetentionConfig(window=4, rules=("drop_on_success",))),
    ("win-2+drop", RetentionConfig(window=2, rules=("drop_on_success",))),
    ("win-1", RetentionConfig(window=1)),
    ("win-4+drop_on_effect", RetentionConfig(window=4, rules=("drop_on_effect",))),
    ("win-4+skip_identical", RetentionConfig(window=4, rules=("skip_identical",))),
    ("win-4+downscale_old", RetentionConfig(window=4, rules=("downscale_old",))),
    ("win-4+a11y_old", RetentionConfig(window=4, rules=("a11y_old",))),
    (
        "win-2+drop+skip+downscale",
        RetentionConfig(window=2, rules=("drop_on_success", "skip_identical", "downscale_old")),
    ),
]

APPS = ["libreoffice_calc", "libreoffice_writer", "libreoffice_impress", "os", "vlc", "code", "google_chrome"]
GUI_ACTIONS = [
    ("left_click", "Click the {} button."),
    ("double_click", "Open the {} entry."),
    ("type", "Type the value into {}."),
    ("key", "Press ctrl+s to save {}."),
    ("scroll", "Scroll down to {}."),
]
WORDS = [
    "cell",
    "column",
    "row",
    "sheet",
    "menu",
    "dialog",
    "toolbar",
    "chart",
    "slide",
    "paragraph",
    "font",
    "file",
    "folder",
    "tab",
    "field",
]


@dataclass(frozen=True)
class Task:
    app: str
    instruction: str
    steps: list[Step]
    current: Observation


def instructions(examples: Path) -> list[str]:
    found = [json.loads(p.read_text())["instruction"] for p in sorted(examples.glob("*/*.json"))]
    return found or ["Sort column B in ascending order and save the spreadsheet."]


def synth_task(
    rng: random.Random, screen: Image.Image, tools: list[ToolSpec], instruction: str, app: str
) -> Task:
    n_steps = max(4, min(30, round(rng.gauss(15, 4))))
    app_tools = [t for t in tools if t.namespace.startswith(app)] if app != "google_chrome" else []
    frame_id, steps, tool_result = 0, [], ""
    a11y = " ".join(f"[{rng.choice(WORDS)} '{rng.choice(WORDS)} {i}']" for i in range(400))  # ~8K chars
    for _ in range(n_steps + 1):
        if rng.random() >= 0.13:  # ~13 % of adjacent frames are byte-identical
            frame_id += 1
        frame = Frame(screen, a11y=a11y, digest=f"frame-{frame_id}")
        if len(steps) == n_steps:
            return Task(app, instruction, steps, Observation(frame, tool_result))
        think = " ".join(rng.choice(WORDS) for _ in range(rng.randint(150, 300)))
        if app_tools and rng.random() < 0.035:  # ~3 % of all steps (apps with tools) are MCP calls
            tool = rng.choice(app_tools)
            call = Call(tool.qualified_name, {p: f"{rng.choice(WORDS)}" for p in tool.required})
            ok = rng.random() < 0.9
            evidence = Evidence(ok, (0 if rng.random() < 0.3 else rng.randint(1, 5)) if ok else None)
            line = f"Use {tool.name} on the {rng.choice(WORDS)}."
            next_result = "x" * rng.randint(100, 3000) if ok else "ERROR: " + "y" * rng.randint(50, 300)
        else:
            action, template = rng.choice(GUI_ACTIONS)
            call = Call(
                "computer_use", {"action": action, "coordinate": [rng.randint(0, 1000), rng.randint(0, 1000)]}
            )
            evidence, line, next_result = None, template.format(rng.choice(WORDS)), ""
        response = f"<think>\n{think}\n</think>\nAction: {line}\n<tool_call>\n{call.to_json()}\n</tool_call>"
        steps.append(Step(frame, tool_result, response, call, evidence))
        tool_result = next_result
    raise AssertionError("unreachable")


def trained_tokenizer(tools: list[ToolSpec], pool: list[str]):
    corpus = [f"{t.qualified_name} {t.description} {json.dumps(dict(t.parameters))}" for t in tools]
    return train_qwen_tokenizer(corpus + pool + [" ".join(WORDS)] * 10, vocab_size=4000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--seed", type=int, default=10086)
    parser.add_argument(
        "--tokenizer", help="local Hugging Face tokenizer directory (default: BPE trained here)"
    )
    parser.add_argument("--keep-think", action="store_true", help="show past reasoning in the window")
    args = parser.parse_args()

    started = time.perf_counter()
    data = osworld_data()
    if not data.tools_registry.exists():
        print(f"bench_context: {data.missing(data.tools_registry)}", file=sys.stderr)
        return 2
    tools = load_registry(data.tools_registry)
    pool = instructions(data.examples)
    if args.tokenizer:
        from transformers import AutoTokenizer

        tokenizer, text_source = (
            AutoTokenizer.from_pretrained(args.tokenizer, local_files_only=True),
            args.tokenizer,
        )
        template = tokenizer.chat_template or QWEN_CHATML_TEMPLATE
    else:
        tokenizer, text_source, template = (
            trained_tokenizer(tools, pool),
            "in-process BPE (approximate)",
            QWEN_CHATML_TEMPLATE,
        )
    counter = TokenCounter(tokenizer, VisionGrid.qwen3_vl(), chat_template=template)

    rng = random.Random(args.seed)
    screen = Image.new("RGB", (1920, 1080), (240, 240, 240))
    tasks = [synth_task(rng, screen, tools, rng.choice(pool), rng.choice(APPS)) for _ in range(args.tasks)]
    retriever = BM25Retriever(tools)
    shown = {id(task): retriever.retrieve(task.app, task.instruction).tools for task in tasks}

    n_steps = sum(len(t.steps) for t in tasks)
    n_mcp = sum(not s.call.is_gui for t in tasks for s in t.steps)
    rows = []
    for name, retention in POLICIES:
        config = ContextConfig(retention=retention, keep_think=args.keep_think)
        logs, images = [], 0
        for task in tasks:
            log = TaskTokens()
            for t, step in enumerate(task.steps):
                # The call of step t was chosen from steps 0..t-1 and the observation at t.
                obs = Observation(step.frame, step.tool_result)
                messages = build_context(
                    task.steps[:t], obs, task.instruction, shown[id(task)], config
                ).messages
                images += count_images(messages)
                log.add(counter.count(messages).total, counter.count_output(step.response))
            logs.append(log)
        rows.append((name, summarize_tokens(logs), images / sum(len(t.input_per_call) for t in logs)))

    base = rows[0][1].input_per_task
    print(
        f"# bench_context: {args.tasks} tasks, seed {args.seed}, {n_steps} steps "
        f"({n_mcp / n_steps:.1%} MCP), 1920x1080 frames = {VisionGrid.qwen3_vl().tokens(1920, 1080)} vision "
        f"tokens (Qwen3-VL), text tokens: {text_source}, think {'kept' if args.keep_think else 'stripped'}\n"
    )
    print("| Policy | Input/task (K) | Avg in/step | Peak p95 | Peak max | Images/step | vs win-4 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, s, img in rows:
        print(
            f"| {name} | {s.input_per_task / 1000:.1f} | {s.input_per_step:,.0f} | {s.peak_p95:,.0f} | "
            f"{s.peak_max:,} | {img:.2f} | {s.input_per_task / base:.2f}x |"
        )
    print(f"\nOutput tokens/task (same for every policy): {rows[0][1].output_per_task:,.0f}")
    ratio = dict((n, s.input_per_task / base) for n, s, _ in rows)["win-2+drop"]
    print(f"win-2+drop / win-4 = {ratio:.2f}x (study: 0.65x); wall {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
