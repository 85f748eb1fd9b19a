"""Time per test tier, from one full run's JUnit XML: which tier costs what, without a second run.

    uv run --frozen pytest --junitxml=/tmp/suite.xml      # the README's test command, plus the report
    uv run --frozen python tools/tier_times.py /tmp/suite.xml

Each tier's tests are what ``pytest --collect-only -m <expr>`` selects (the README's marker
expressions); a test's time is JUnit's (setup, call and teardown), so session fixtures count where
they first run. Prints one table: tests, passed/failed/skipped, and minutes per tier.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

# The tiers of README "Run the tests": they partition the default selection.
TIERS: dict[str, str] = {
    "unit": "not desktop and not libvirt and not slow",
    "slow (no desktop)": "slow and not desktop and not libvirt",
    "desktop": "desktop and not libvirt",
    "vm": "libvirt",
}


def collected(expression: str) -> set[str]:
    """Node ids ``-m expression`` selects (within the default ``addopts`` selection)."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", expression],
        capture_output=True,
        text=True,
        check=False,
    )
    return {line.strip() for line in run.stdout.splitlines() if "::" in line}


def junit_times(path: Path) -> dict[str, tuple[float, str]]:
    """Node id -> (seconds, outcome) for every test case in the JUnit file."""
    results: dict[str, tuple[float, str]] = {}
    for case in ET.parse(path).iter("testcase"):
        module = case.get("classname", "").replace(".", "/")
        # classname is dotted path[.Class]; rebuild the file part as pytest's node id does.
        parts = module.split("/")
        for cut in range(len(parts), 0, -1):
            candidate = "/".join(parts[:cut]) + ".py"
            if Path(candidate).exists():
                node = "::".join([candidate, *parts[cut:], case.get("name", "")])
                break
        else:
            node = f"{module}::{case.get('name', '')}"
        outcome = "passed"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        results[node] = (float(case.get("time", 0.0)), outcome)
    return results


def main(argv: list[str] | None = None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("junit", type=Path, help="JUnit XML of one full run (pytest --junitxml)")
    args = parser.parse_args(argv)
    times = junit_times(args.junit)
    print(f"{'tier':<20} {'tests':>6} {'passed':>7} {'failed':>7} {'skipped':>8} {'minutes':>8}")
    covered: set[str] = set()
    for tier, expression in TIERS.items():
        ids = collected(expression) & set(times)
        covered |= ids
        outcomes = [times[i][1] for i in ids]
        minutes = sum(times[i][0] for i in ids) / 60
        print(
            f"{tier:<20} {len(ids):>6} {outcomes.count('passed'):>7} {outcomes.count('failed'):>7} "
            f"{outcomes.count('skipped'):>8} {minutes:>8.1f}"
        )
    total = sum(t for t, _ in times.values()) / 60
    print(f"{'all (JUnit)':<20} {len(times):>6} {'':>7} {'':>7} {'':>8} {total:>8.1f}")
    unmatched = sorted(set(times) - covered)
    if unmatched:
        print(f"{len(unmatched)} tests in no tier (ids not matched), e.g. {unmatched[:5]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
