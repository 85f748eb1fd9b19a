"""``osworld-mcp``: the env's command line; ``tasks --coverage`` reports which OSWorld tasks run here.

Examples::

    osworld-mcp tasks --coverage                                 # the 369 tasks shipped with the package
    osworld-mcp tasks --coverage --examples OSWorld/evaluation_examples/examples
    osworld-mcp tasks --coverage --cache ~/osworld-cache        # counts cached downloads as present
    osworld-mcp tasks --coverage --list unsupported              # one line per task, with its reason
    osworld-mcp tasks --coverage --desktop osworld-image         # on OSWorld's Ubuntu.qcow2 (libvirt)
    osworld-mcp tasks fetch --cache ~/osworld-cache [DOMAIN|TASK_ID ...] [--dry-run]   # fills the cache

Environment variables are read here only: ``OSWORLD_EXAMPLES`` is the default of
``--examples``, else the ``examples`` of ``OSWORLD_DATA_DIR`` (default: the copy shipped in
this package, :mod:`osworld_mcp_env.data_paths`); ``OSWORLD_CACHE`` (``:``-separated) is
the default of ``--cache``; ``tasks fetch`` also reads ``HF_ENDPOINT`` and ``HF_TOKEN`` (see
:mod:`osworld_mcp_env.tasks.fetch.cli`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from osworld_mcp_env.data_paths import osworld_data
from osworld_mcp_env.devkit import validate
from osworld_mcp_env.tasks.coverage import STATUSES, DesktopKind, coverage
from osworld_mcp_env.tasks.fetch import cli as fetch_cli


def _source_options(default: object) -> argparse.ArgumentParser:
    """``--examples`` and ``--cache``; ``fetch`` gets them with SUPPRESS, so values given before it stay."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(
        "--examples",
        type=Path,
        action="append",
        default=default,
        help="Task folder(s) (examples/<domain>/<id>.json); default $OSWORLD_EXAMPLES, else the "
        "369 OSWorld tasks shipped with the package ($OSWORLD_DATA_DIR overrides).",
    )
    p.add_argument(
        "--cache",
        type=Path,
        action="append",
        default=default,
        help="File-cache root(s) of download/cloud_file urls (fetch writes to the first); "
        "default $OSWORLD_CACHE.",
    )
    return p


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="osworld-mcp", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    tasks = sub.add_parser("tasks", parents=[_source_options(None)], help="Inspect OSWorld task files.")
    tasks.add_argument("--coverage", action="store_true", help="Print the coverage table.")
    tasks.add_argument(
        "--list",
        choices=["all", *STATUSES],
        help="Also list the tasks with that status, one per line.",
    )
    tasks.add_argument(
        "--desktop",
        type=DesktopKind,
        choices=list(DesktopKind),
        default=DesktopKind.EMBEDDED,
        help="Whose verdicts: the embedded desktop (default) or OSWorld's Ubuntu.qcow2 on libvirt.",
    )
    fetch_cli.add_parser(tasks.add_subparsers(dest="action"), _source_options(argparse.SUPPRESS))
    validate.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None, environ: dict[str, str] | None = None) -> int:
    """Runs the CLI; returns the exit code (2 on a usage error)."""
    env = os.environ if environ is None else environ
    args = _parser().parse_args(argv)
    if args.command == "validate":
        return validate.main(args)
    examples = args.examples or [Path(env.get("OSWORLD_EXAMPLES") or osworld_data(env).examples)]
    missing = [str(d) for d in examples if not d.is_dir()]
    if missing:
        print(f"osworld-mcp: not a folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    caches = args.cache or [Path(p) for p in env.get("OSWORLD_CACHE", "").split(":") if p]
    if args.action == "fetch":
        return fetch_cli.main(args, examples, caches, env)
    if not args.coverage:
        print("osworld-mcp: tasks needs --coverage or a subcommand (fetch).", file=sys.stderr)
        return 2
    try:
        report = coverage(examples, caches, args.desktop)
    except ModuleNotFoundError as exc:  # the metrics' libraries: the interface-only install lacks them
        print(
            f"osworld-mcp: tasks --coverage checks every task's metrics and needs the evaluators extra "
            f"(pip install 'osworld-mcp-env[evaluators]'): {exc}",
            file=sys.stderr,
        )
        return 2
    print(report.table())
    if args.list:
        print()
        for item in report.items:
            if args.list in ("all", item.status):
                print(f"{item.domain}/{item.path.stem}\t{item.status}\t{item.reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
