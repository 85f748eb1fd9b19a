"""Runs a task's evaluator: postconfig, getters, metrics, ``conj``, infeasible.

Semantics follow OSWorld's ``DesktopEnv.evaluate``:

1. The postconfig steps run first.
2. An infeasible task scores 1 exactly when the agent declared it infeasible
   (OSWorld's ``FAIL``; here ``terminate(status="failure")``, mapped by the env);
   a feasible task the agent declared infeasible scores 0 without running the checks.
3. Each check runs ``metric(result_getter(), expected_getter() or None, **options)``.
4. ``conj="and"``: 0 at the first 0, else the mean. ``conj="or"``: 1 at the first 1,
   else the max.
5. A result the agent never produced (``vm_file`` of a missing file) scores 0.

What stops the evaluator itself (a postconfig step that fails, a dead desktop, an
expected file missing from the cache, a metric that chokes on the task's rules)
raises :class:`~osworld_mcp_env.errors.EvaluationError`; it is never a 0.
"""

from __future__ import annotations

from dataclasses import dataclass

from osworld_mcp_env.backends.base import Desktop
from osworld_mcp_env.errors import DesktopError, EvaluationError, RegistryError, SetupStepError, TaskError
from osworld_mcp_env.evaluators.registry import GETTERS, METRICS, ZeroScore
from osworld_mcp_env.tasks.context import TaskContext
from osworld_mcp_env.tasks.model import Check, Conj, GetterSpec, Task
from osworld_mcp_env.tasks.setup import run_steps


@dataclass(frozen=True)
class CheckOutcome:
    """The score of one check, whether the agent's artefact was missing, and why a 0 is a 0.

    ``reason`` is set when the check scored 0 because OSWorld's own metric would crash
    on these inputs (see docs/evaluators.md, "Deviations").
    """

    func: str
    score: float
    result_missing: bool = False
    reason: str = ""


@dataclass(frozen=True)
class Evaluation:
    """The evaluator's verdict.

    Attributes:
        score: In [0, 1].
        checks: One outcome per check that ran (fewer than the task's checks when
            ``conj`` short-circuited; none for infeasible tasks).
        infeasible: The task is infeasible by design.
        declared_infeasible: The agent declared the task infeasible.
    """

    score: float
    checks: tuple[CheckOutcome, ...] = ()
    infeasible: bool = False
    declared_infeasible: bool = False


def evaluate(
    task: Task,
    desktop: Desktop,
    context: TaskContext,
    *,
    declared_infeasible: bool = False,
    run_postconfig: bool = True,
) -> Evaluation:
    """Scores the desktop's current state against ``task``.

    Args:
        task: A task loaded by :func:`~osworld_mcp_env.tasks.load_task`.
        desktop: The desktop the episode ran on.
        context: The same run context the setup used (cache roots, work dir).
        declared_infeasible: The agent ended the episode declaring the task infeasible.
        run_postconfig: Run the evaluator's postconfig steps first (default True).

    Returns:
        The :class:`Evaluation`.

    Raises:
        TaskError: The task was loaded leniently and is not supported here.
        EvaluationError: The evaluator could not run; this is not a score.
    """
    if not task.supported:
        raise TaskError(f"Task {task.id!r} is not supported here: {'; '.join(task.unsupported)}")
    ev = task.evaluator
    if run_postconfig and ev.postconfig:
        try:
            run_steps(ev.postconfig, desktop, context, phase="postconfig")
        except (SetupStepError, DesktopError) as exc:
            raise EvaluationError(
                f"Evaluator of task {task.id!r} could not run its postconfig: {exc}"
            ) from exc
    if ev.infeasible:
        return Evaluation(float(declared_infeasible), (), True, declared_infeasible)
    if declared_infeasible:
        return Evaluation(0.0, (), False, True)
    outcomes: list[CheckOutcome] = []
    for check in ev.checks:
        outcome = _run_check(check, desktop, context, task.id)
        outcomes.append(outcome)
        if ev.conj is Conj.AND and outcome.score == 0.0:
            return Evaluation(0.0, tuple(outcomes))
        if ev.conj is Conj.OR and outcome.score == 1.0:
            return Evaluation(1.0, tuple(outcomes))
    scores = [o.score for o in outcomes]
    score = sum(scores) / len(scores) if ev.conj is Conj.AND else max(scores)
    return Evaluation(score, tuple(outcomes))


def _get(spec: GetterSpec | None, desktop: Desktop, context: TaskContext, task_id: str) -> object:
    if spec is None:
        return None
    try:
        fn = GETTERS.get(spec.type)
    except RegistryError as exc:
        raise EvaluationError(f"task {task_id!r}: {exc}") from exc
    try:
        return fn(desktop, context, spec.config)
    except KeyError as exc:
        raise EvaluationError(f"task {task_id!r}: getter {spec.type!r} lacks the key {exc}.") from exc


def _run_check(check: Check, desktop: Desktop, context: TaskContext, task_id: str) -> CheckOutcome:
    try:
        metric = METRICS.get(check.func)
    except RegistryError as exc:
        raise EvaluationError(f"task {task_id!r}: {exc}") from exc
    result = _get(check.result, desktop, context, task_id)
    expected = _get(check.expected, desktop, context, task_id)
    missing = result is None or (isinstance(result, list) and any(r is None for r in result))
    try:
        score = metric.fn(result, expected, **dict(check.options))
    except ZeroScore as exc:
        return CheckOutcome(check.func, 0.0, missing, str(exc))
    except EvaluationError as exc:
        raise EvaluationError(f"task {task_id!r}, metric {check.func!r}: {exc}") from exc
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        # The task's rules do not fit the metric: a broken evaluator, not a failed agent.
        raise EvaluationError(
            f"task {task_id!r}, metric {check.func!r} failed on its inputs: {type(exc).__name__}: {exc}"
        ) from exc
    score = float(score)
    if not 0.0 <= score <= 1.0:
        raise EvaluationError(f"task {task_id!r}, metric {check.func!r} returned {score}, outside [0, 1].")
    return CheckOutcome(check.func, score, missing)
