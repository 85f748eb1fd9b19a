"""``hybrid-agent eval``, ``report``, ``label``, ``rewrite`` and the OSWorld exports.

    hybrid-agent eval --suite bundled --policy scripted --context win2+drop --runs 3 --envs 2 --out runs/a
    hybrid-agent eval --suite test_all.json --tasks-dir examples --policy openai:http://localhost:8000#Qwen3-VL-8B
    hybrid-agent eval --suite bundled --policy anthropic:claude-sonnet-4-5 --out runs/claude
    hybrid-agent eval --suite bundled --policy openai-cua:computer-use-preview --out runs/cua
    hybrid-agent report runs/a runs/b --out runs/report
    hybrid-agent export-osworld runs/a --out results/a      # OSWorld's result_dir layout, one per run
    hybrid-agent summary results/a --osworld                # show_result.py's per-domain lines
    hybrid-agent rewrite runs/a --out runs/a-hybridcua --mode auto   # HybridCUA's grammar, replayed, 1s kept

``eval`` resumes: finished episodes in ``--out`` are skipped, so rerun the same
command after a kill. It prints Table 2 and Table 3 at the end (as ``report``).
With ``--budget-usd X`` it starts no episode once the run directory has spent X USD
and exits with status 3 (``stop.json`` says why); a larger X continues the run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from hybrid_agent.adapters import DEFAULT_ADAPTER, adapter_names
from hybrid_agent.agent_loop import AgentConfig
from hybrid_agent.coords import CoordinatePolicy
from hybrid_agent.cost import Budget, PriceTable
from hybrid_agent.errors import ConfigError, HybridAgentError
from hybrid_agent.interface_mode import INTERFACE_MODES
from hybrid_agent.labels import TIE_POINTS, Mode, label_runs, write_labels
from hybrid_agent.policies import PolicyOptions, close_policy, make_policy
from hybrid_agent.policies.anthropic import DEFAULT_TOOL, TOOL_BETAS
from hybrid_agent.report import write_report
from hybrid_agent.report.osworld import (
    OBSERVATION_TYPE,
    export_osworld,
    find_trees,
    format_summary,
    trees_from_run,
)
from hybrid_agent.rewrite import RewriteConfig, RewriteMode, rewrite_run
from hybrid_agent.rewrite.replay import REPORT_FILE
from hybrid_agent.runner import SCHEDULES, RunConfig, Runner
from hybrid_agent.settings import AGENT_SETTINGS, agent_setting
from hybrid_agent.suite import load_suite


def _eval_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="run a suite with a policy and record every episode")
    _eval_arguments(p, policy_required=True)
    p.add_argument("--out", required=True, help="run directory (resumed when it exists)")


def _eval_arguments(p: argparse.ArgumentParser, policy_required: bool) -> None:
    """What a run is (suite, policy, agent, sampling, budget): ``eval``'s flags, ``label``'s too."""
    p.add_argument("--suite", default="bundled", help="'bundled', a split file or a directory of task JSONs")
    p.add_argument("--tasks-dir", help="where a split file's task ids are looked up")
    p.add_argument(
        "--policy",
        required=policy_required,
        help="scripted[:tools|wrong], replay:DIR, openai:URL#MODEL, anthropic:MODEL, openai-cua:MODEL, "
        "hf:PATH, pkg.mod:Class",
    )
    p.add_argument("--context", default="win4", help="context policy: win4, win2+drop, all+skip ...")
    p.add_argument(
        "--setting",
        default="study",
        choices=list(AGENT_SETTINGS),
        help="named condition: "
        + "; ".join(f"{name}: {s.description}" for name, s in AGENT_SETTINGS.items())
        + " (--env-option values win over its env options)",
    )
    p.add_argument("--runs", type=int, default=1, help="runs per task")
    p.add_argument("--envs", type=int, default=1, help="desktops in parallel")
    p.add_argument("--max-steps", type=int, default=50)
    _agent_flags(p)
    p.add_argument(
        "--schedule",
        choices=list(SCHEDULES),
        default="per_episode",
        help="per_episode: each desktop runs on its own (default); lockstep: every policy call waits for all",
    )
    p.add_argument("--no-screenshots", action="store_true", help="do not write step PNGs")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--max-tokens", type=int, default=PolicyOptions.max_tokens, help="output budget per call")
    p.add_argument("--top-p", type=float, help="nucleus sampling mass (default: the server's)")
    p.add_argument("--repetition-penalty", type=float, help="vLLM/SGLang repetition penalty (default: none)")
    p.add_argument("--seed", type=int, help="sampling seed sent with every request")
    p.add_argument(
        "--extra-body",
        type=json.loads,
        metavar="JSON",
        help='fields merged into every request, e.g. {"chat_template_kwargs": {"enable_thinking": true}}',
    )
    p.add_argument(
        "--api-key-env",
        default=PolicyOptions.api_key_env,
        metavar="NAME",
        help="environment variable holding the API key (default: the kind's own, OPENAI_API_KEY or "
        "ANTHROPIC_API_KEY; unset: a placeholder key is sent)",
    )
    p.add_argument(
        "--computer-tool",
        choices=list(TOOL_BETAS),
        help=f"anthropic: the computer tool version, with its beta header (default {DEFAULT_TOOL})",
    )
    p.add_argument(
        "--ack-safety-checks",
        action="store_true",
        help="openai-cua: acknowledge an action's pending safety checks and run it (default: the step "
        "ends as a safety_check error)",
    )
    p.add_argument("--timeout", type=float, default=PolicyOptions.timeout_s, help="seconds per HTTP request")
    p.add_argument("--tool-format", choices=["text", "functions"], default="text")
    p.add_argument("--retries", type=int, default=4)
    p.add_argument(
        "--env-option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help='extra gym.make keyword, e.g. backend="local" (repeatable)',
    )
    p.add_argument(
        "--max-tries",
        type=int,
        default=3,
        help="on resume, rerun an episode that ended in a policy or desktop error up to this many tries",
    )
    _cost_flags(p)
    p.add_argument(
        "--budget-usd",
        type=float,
        metavar="X",
        help="start no episode once the run directory has spent X USD (episodes in flight finish; "
        "rerun with a larger X to continue); needs a price for the model",
    )


def _cost_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--prices",
        metavar="FILE",
        help="price file layered on the bundled one (hybrid_agent/prices.json: USD per million tokens)",
    )


def _agent_flags(p: argparse.ArgumentParser) -> None:
    """The :class:`~hybrid_agent.agent_loop.AgentConfig` flags (the trainer's ``[agent]`` section)."""
    p.add_argument("--no-retrieval", action="store_true", help="show every tool of the app, unranked")
    p.add_argument("--top-k", type=int, default=18, help="BM25 top-k tools shown (the study: 18)")
    p.add_argument("--gui-only", action="store_true", help="offer no MCP tools")
    p.add_argument(
        "--interface",
        choices=INTERFACE_MODES,
        default="hybrid",
        help="accept GUI steps only, CLI steps only, or both (a refused call is an error the model reads)",
    )
    p.add_argument("--keep-think", action="store_true", help="show past reasoning inside the window")
    p.add_argument(
        "--thinking",
        action="store_true",
        help="Thinking model: a reply without </think> never finished reasoning and executes nothing",
    )
    p.add_argument("--tool-result-chars", type=int, default=1500, help="L, characters of a relayed result")
    p.add_argument(
        "--adapter",
        default=DEFAULT_ADAPTER,
        choices=adapter_names(),
        metavar="NAME",
        help="model family: its prompt, reply format, coordinates and screenshots "
        f"({', '.join(adapter_names())}; default {DEFAULT_ADAPTER})",
    )
    p.add_argument(
        "--coordinates",
        choices=[str(c) for c in CoordinatePolicy],
        help="override the adapter's coordinate space",
    )
    p.add_argument("--min-pixels", type=int, help="override the adapter's smallest resized screenshot area")
    p.add_argument("--max-pixels", type=int, help="override the adapter's largest resized screenshot area")
    p.add_argument(
        "--no-cite-frames",
        action="store_true",
        help="neither show the frame id nor send it with coordinate actions (no stale-frame guard)",
    )
    p.add_argument(
        "--parse-retries",
        type=int,
        default=0,
        help="re-sample a malformed reply up to N times before the step counts as malformed "
        "(default 0, as the study; harnesses use 5 at temperature > 0)",
    )


def _agent_config(args: argparse.Namespace) -> AgentConfig:
    return AgentConfig(
        context=args.context,
        retrieval=not args.no_retrieval,
        top_k=args.top_k,
        gui_only=args.gui_only,
        interface=args.interface,
        keep_think=args.keep_think,
        thinking=args.thinking,
        tool_result_chars=args.tool_result_chars,
        coordinates=args.coordinates,
        adapter=args.adapter,
        min_pixels=args.min_pixels,
        max_pixels=args.max_pixels,
        parse_retries=args.parse_retries,
        cite_frames=not args.no_cite_frames,
    )


def _report_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="tables, plot and viewer for run directories, side by side")
    p.add_argument("runs", nargs="+", help="run directories")
    p.add_argument("--out", help="where the tables and plot go (default: the first run directory)")
    _cost_flags(p)


def _osworld_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export-osworld", help="write a run directory in OSWorld's results layout")
    p.add_argument("run_dir", help="run directory")
    p.add_argument("--out", required=True, help="where run<r>/<action_space>/<observation_type>/<model>/ go")
    p.add_argument("--action-space", help="default: computer_use_mcp (computer_use for a --gui-only run)")
    p.add_argument("--observation-type", default=OBSERVATION_TYPE)
    p.add_argument("--model", help="model folder name (default: the model the policy spec names)")
    s = sub.add_parser("summary", help="per-domain success rates on one screen, as OSWorld's show_result.py")
    s.add_argument("path", help="a run directory, or with --osworld an OSWorld result_dir (or an export)")
    s.add_argument("--osworld", action="store_true", help="read result.txt files of an OSWorld results tree")


def _label_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "label",
        help="interface labels (HybridCUA's rule): --runs rollouts per task in GUI-only, CLI-only and "
        "hybrid mode (with --policy), then one label per task",
    )
    _eval_arguments(p, policy_required=False)
    p.add_argument(
        "--out",
        required=True,
        help="holds one run directory per mode (gui/, cli/, hybrid/; resumed when they exist); without "
        "--policy the runs already there are labelled",
    )
    p.add_argument("--labels", required=True, help="the labels file to write ([reward] labels_file reads it)")
    p.add_argument("--tie-points", type=float, default=TIE_POINTS, help="success rates this close tie")


def _rewrite_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "rewrite",
        help="HybridCUA's data: a run's successful episodes in bash + pyautogui (0-999 grid), terminal "
        "typing as direct commands, each replayed on a fresh desktop and kept when it scores 1",
    )
    p.add_argument("run_dir", help="a run directory of hybrid-agent eval")
    p.add_argument("--out", required=True, help="the kept run directory, replays/ and rewrite_report.json")
    p.add_argument(
        "--mode",
        choices=[str(m) for m in RewriteMode],
        default=str(RewriteMode.AUTO),
        help="gui: every step as pyautogui; interleaved: terminal typing as direct commands (episodes "
        "without it are skipped); auto: interleaved where it applies, else gui",
    )
    p.add_argument("--suite", help="the recording's suite (default: its run.json's)")
    p.add_argument("--tasks-dir", help="where a split file's task ids are looked up")
    p.add_argument("--envs", type=int, default=1, help="desktops replaying in parallel")
    p.add_argument("--min-score", type=float, default=1.0, help="rewrite and keep at this score or above")
    p.add_argument(
        "--env-option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="gym.make keyword over the run's",
    )


def run_rewrite(args: argparse.Namespace) -> int:
    """The ``rewrite`` command: rewrite, replay, keep; prints the report's table."""
    config = RewriteConfig(
        mode=RewriteMode(args.mode),
        min_score=args.min_score,
        envs=args.envs,
        env_kwargs=_env_kwargs(args.env_option),
    )
    report = rewrite_run(args.run_dir, args.out, config, args.suite, args.tasks_dir)
    print(report.table())
    print(f"wrote {Path(args.out) / REPORT_FILE}", file=sys.stderr)
    return 0


def run_label(args: argparse.Namespace) -> int:
    """The ``label`` command: the three modes' rollouts (``eval`` with ``--interface``), then the labels."""
    runs = {mode: Path(args.out) / mode for mode in Mode}
    if args.policy:
        for mode, run_dir in runs.items():
            print(f"hybrid-agent label: {mode} rollouts into {run_dir}", file=sys.stderr)
            run_eval(argparse.Namespace(**{**vars(args), "interface": str(mode), "out": str(run_dir)}))
    labels = label_runs(runs, args.tie_points)
    for label in labels:
        rates = ", ".join(f"{r.mode} {len(r.success_lengths)}/{r.rollouts}" for r in label.modes)
        ranking = " > ".join(map(str, label.ranking))
        print(f"{label.task_id}: label {label.label} ({ranking}; {rates})")
    print(f"{len(labels)} tasks labelled in {write_labels(args.labels, labels, args.tie_points)}")
    return 0


def run_export(args: argparse.Namespace) -> int:
    """The ``export-osworld`` command."""
    export = export_osworld(
        args.run_dir,
        args.out,
        action_space=args.action_space,
        observation_type=args.observation_type,
        model=args.model,
    )
    for root in export.result_dirs:
        print(root / export.target)
    print(f"{export.tasks} task folders, {export.scored} with result.txt", file=sys.stderr)
    return 0


def run_summary(args: argparse.Namespace) -> int:
    """The ``summary`` command."""
    trees = find_trees(args.path) if args.osworld else trees_from_run(args.path)
    if not trees:
        what = "OSWorld result tree (<action_space>/<observation_type>/<model>/)" if args.osworld else "score"
        raise ConfigError(f"No {what} found under {args.path}.")
    print(format_summary(trees), end="")
    return 0


def _env_kwargs(items: Sequence[str]) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--env-option needs KEY=JSON, got {item!r}")
        out[key] = json.loads(value)
    return out


def _provider_extra(args: argparse.Namespace) -> dict:
    """The provider policies' kind-specific options (``PolicyOptions.extra``) set by flags."""
    extra: dict = {}
    if args.computer_tool:
        extra["computer_tool"] = args.computer_tool
    if args.ack_safety_checks:
        extra["ack_safety_checks"] = True
    return extra


def run_eval(args: argparse.Namespace) -> int:
    """The ``eval`` command."""
    options = PolicyOptions(
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        top_p=args.top_p,
        repetition_penalty=args.repetition_penalty,
        seed=args.seed,
        extra_body=args.extra_body or {},
        api_key_env=args.api_key_env,
        timeout_s=args.timeout,
        tool_format=args.tool_format,
        retries=args.retries,
        extra=_provider_extra(args),
    )
    setting = agent_setting(args.setting)
    config = RunConfig(
        policy=args.policy,
        suite=args.suite,
        agent=setting.apply(_agent_config(args)),
        runs=args.runs,
        envs=args.envs,
        max_steps=args.max_steps,
        schedule=args.schedule,
        save_screenshots=not args.no_screenshots,
        env_kwargs=setting.env_kwargs(_env_kwargs(args.env_option)),
    )
    prices = PriceTable.bundled().with_file(args.prices)
    budget = Budget.for_policy(args.budget_usd, args.policy, prices) if args.budget_usd is not None else None
    tasks = load_suite(args.suite, args.tasks_dir)
    policy = make_policy(args.policy, options)
    try:
        result = Runner(config, policy, args.out, max_tries=args.max_tries, budget=budget).evaluate(tasks)
    finally:
        close_policy(policy)
    print(
        f"{result.finished} episodes run ({result.retried} retried after an error), "
        f"{result.skipped} already done, {result.errors} errors, {result.exhausted} errored out of "
        f"tries, {result.wall_s:.1f} s",
        file=sys.stderr,
    )
    _print_report([args.out], args.out, prices)
    if result.stopped is not None and budget is not None:
        print(
            f"hybrid-agent: stopped, budget reached: {result.spent_usd:.4f} of {budget.limit_usd} USD spent "
            f"({budget.model}); {result.not_run} episodes not run (recorded in stop.json). Rerun the same "
            "command with a larger --budget-usd to continue.",
            file=sys.stderr,
        )
        return 3
    return 0


def _print_report(runs: Sequence[str], out: str, prices: PriceTable) -> None:
    report = write_report(runs, out, prices)
    print("Table 2: accuracy and tokens\n")
    print(report.table2)
    print("Table 3: behaviour\n")
    print(report.table3)
    for line in report.headlines:
        print(line)
    print("wrote " + ", ".join(str(p) for p in report.files), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hybrid-agent`` command."""
    parser = argparse.ArgumentParser(prog="hybrid-agent", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _eval_parser(sub)
    _report_parser(sub)
    _osworld_parsers(sub)
    _label_parser(sub)
    _rewrite_parser(sub)
    args = parser.parse_args(argv)
    # Custom policies are named by import path relative to where the command runs, as with `python -m`.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if args.command == "eval":
            return run_eval(args)
        if args.command == "export-osworld":
            return run_export(args)
        if args.command == "summary":
            return run_summary(args)
        if args.command == "label":
            return run_label(args)
        if args.command == "rewrite":
            return run_rewrite(args)
        runs = [str(Path(r)) for r in args.runs]
        _print_report(runs, args.out or runs[0], PriceTable.bundled().with_file(args.prices))
        return 0
    except HybridAgentError as exc:
        print(f"hybrid-agent: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
