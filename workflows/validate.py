"""How the steps of a workflow fit together, checked before anything is expanded.

Each problem is reported with where it is and what to write, all at once: unknown steps in
`needs` or `from`, cycles, matrices the gateway cannot expand, placeholders it cannot fill or
that stand where they may not, inputs that name no instance a producer can have, job
fields of the wrong shape. Limits are refused first (LimitExceeded), before any work they
bound. What depends on each instance's values (which output a path names) is checked when
the plan is made (`plan`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from typing import Any

from workflows import graph
from workflows.errors import LimitExceeded, Problem, ProblemKind
from workflows.limits import DEFAULT_LIMITS, Limits
from workflows.matrix import (
    MATRIX_KEY,
    has_placeholder,
    matrix_size,
    placeholder_problem,
    value_text,
)
from workflows.model import Step, WorkflowSpec
from workflows.refs import DataRef, parse_ref

# The job fields a placeholder may stand in (and that the workflow reads): all data.
TEMPLATED = ("name", "args", "environment", "outputs")
NEEDS = "needs"
TAKES_INPUT = "takes an input from"


def check_limits(spec: WorkflowSpec, limits: Limits = DEFAULT_LIMITS) -> None:
    """LimitExceeded if `spec` has too many steps, instances or retries."""
    if len(spec.steps) > limits.max_steps:
        raise LimitExceeded("the number of steps", len(spec.steps), limits.max_steps,
                            "split the workflow in several, or sweep with a matrix")
    total = 0
    for name, step in spec.steps.items():
        size = matrix_size(step.matrix)
        if size > limits.max_matrix:
            raise LimitExceeded(f"the number of instances of step {name}'s matrix", size,
                                limits.max_matrix, "sweep fewer values, or split the step")
        if step.retry.max > limits.max_retries:
            raise LimitExceeded(f"retry.max of step {name}", step.retry.max,
                                limits.max_retries, "retry fewer times")
        total += size
    if total > limits.max_instances:
        raise LimitExceeded("the number of step instances of the workflow", total,
                            limits.max_instances, "sweep fewer values, or split the workflow")


def step_edges(spec: WorkflowSpec) -> dict[str, dict[str, str]]:
    """step -> {known step it waits for: how}, from `needs` and parsable `from:`s."""
    edges: dict[str, dict[str, str]] = {}
    for name, step in spec.steps.items():
        waits = edges.setdefault(name, {})
        for item in step.inputs:
            ref = _ref_or_none(item.source)
            if ref is not None and ref.step in spec.steps:
                waits[ref.step] = TAKES_INPUT
        for needed in step.needs:  # after inputs: "needs" is the stronger word
            if needed in spec.steps:
                waits[needed] = NEEDS
    return edges


def validate_spec(spec: WorkflowSpec) -> list[Problem]:
    """Every problem of how `spec`'s steps fit together ([] when they do)."""
    problems: list[Problem] = []
    for name, step in spec.steps.items():
        at = f"steps.{name}"
        problems += _job_problems(at, name, step)
        problems += _needs_problems(at, name, step, spec)
        problems += _matrix_problems(at, step)
        problems += _input_problems(at, name, step, spec)
    edges = step_edges(spec)
    nodes = list(spec.steps)
    for cycle in graph.cycles(nodes, edges):
        problems.append(Problem(ProblemKind.CYCLE, f"steps.{cycle[0]}", (
            f"these steps wait for each other, so none can start: "
            f"{graph.describe(cycle, edges)}")))
    return problems


def _needs_problems(at: str, name: str, step: Step, spec: WorkflowSpec) -> Iterator[Problem]:
    for i, needed in enumerate(step.needs):
        if needed == name:
            continue  # a cycle of one, reported with the others
        if needed not in spec.steps:
            yield Problem(ProblemKind.UNKNOWN_STEP, f"{at}.needs[{i}]",
                          _unknown_step(needed, spec))
        elif step.needs.index(needed) != i:
            yield Problem(ProblemKind.SCHEMA, f"{at}.needs[{i}]", f"{needed} is listed twice")


def _matrix_problems(at: str, step: Step) -> Iterator[Problem]:
    for key, values in step.matrix.items():
        if not MATRIX_KEY.matches(key):
            yield Problem(ProblemKind.MATRIX, f"{at}.matrix", MATRIX_KEY.problem(key) or "")
        texts = [value_text(v) for v in values]
        twice = sorted({t for t in texts if texts.count(t) > 1})
        if twice:
            yield Problem(ProblemKind.MATRIX, f"{at}.matrix.{key}",
                          f"{', '.join(map(repr, twice))} appears more than once: each value "
                          "makes one instance, so give each once")


def _job_problems(at: str, name: str, step: Step) -> Iterator[Problem]:
    job = step.job
    names = list(step.matrix)
    for field, shape in _shape_problems(job):
        yield Problem(ProblemKind.JOB, f"{at}.job.{field}", shape)
    for where, text, is_key in _strings(job, f"{at}.job"):
        if not has_placeholder(text):
            continue
        # A name (an environment variable's, say) stays fixed: only values may vary.
        field = where.removeprefix(f"{at}.job.").split(".")[0].split("[")[0]
        if is_key or field not in TEMPLATED:
            yield Problem(ProblemKind.PLACEHOLDER, where, (
                "a placeholder may stand only in the job's name, args, environment values and "
                "outputs" + ("; a script reads a value from an environment variable: set "
                             "`environment: {N: '${{ matrix.n }}'}` and use \"$N\""
                             if where.startswith(f"{at}.job.script") else "")))
            continue
        problem = placeholder_problem(text, names, name)
        if problem is not None:
            yield Problem(ProblemKind.PLACEHOLDER, where, problem)


def _input_problems(at: str, name: str, step: Step, spec: WorkflowSpec) -> Iterator[Problem]:
    names = list(step.matrix)
    for i, item in enumerate(step.inputs):
        where = f"{at}.inputs[{i}]"
        for field, text in (("from", item.source), ("dest", item.dest)):
            problem = placeholder_problem(text, names, name)
            if problem is not None:
                yield Problem(ProblemKind.PLACEHOLDER, f"{where}.{field}", problem)
        try:
            ref = parse_ref(item.source)
        except ValueError as exc:
            yield Problem(ProblemKind.DATA_EDGE, f"{where}.from", str(exc))
            continue
        if ref.step not in spec.steps:
            yield Problem(ProblemKind.UNKNOWN_STEP, f"{where}.from",
                          _unknown_step(ref.step, spec))
            continue
        problem = _selector_problem(ref, spec.steps[ref.step])
        if problem is not None:
            yield Problem(ProblemKind.DATA_EDGE, f"{where}.from", problem)


def _selector_problem(ref: DataRef, producer: Step) -> str | None:
    keys = list(producer.matrix)
    example = ",".join(f"{k}=..." for k in keys)
    if not keys:
        if ref.selector is not None:
            return (f"step {ref.step} has no matrix, so it has one instance: write "
                    f"{ref.step}:outputs/{ref.path}")
        return None
    if ref.selector is None:
        return (f"step {ref.step} has a matrix: name one instance as "
                f"{ref.step}[{example}]:outputs/{ref.path} or all of them as "
                f"{ref.step}[*]:outputs/{ref.path}")
    if isinstance(ref.selector, str):  # ALL
        return None
    given = [k for k, _ in ref.selector]
    if set(given) != set(keys):
        return (f"name every name of step {ref.step}'s matrix ({', '.join(keys)}) to pick one "
                f"instance, e.g. {ref.step}[{example}], or take all of them with "
                f"{ref.step}[*]")
    for key, value in ref.selector:
        texts = [value_text(v) for v in producer.matrix[key]]
        if not has_placeholder(value) and value not in texts:
            return (f"step {ref.step} has no instance with {key}={value}: its values of {key} "
                    f"are {', '.join(texts)}")
    return None


def _shape_problems(job: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    # Only the fields the workflow reads; the gateway's JobSpec checks the rest per instance.
    if "name" in job and not isinstance(job["name"], str):
        yield "name", "must be a string"
    for field in ("args", "outputs"):
        if field in job and not (isinstance(job[field], list)
                                 and all(isinstance(v, str) for v in job[field])):
            yield field, "must be a list of strings"
    env = job.get("environment")
    if "environment" in job and not (isinstance(env, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        yield "environment", "must map names to string values"


def _strings(value: Any, where: str) -> Iterator[tuple[str, str, bool]]:
    """Every string in a parsed JSON value, with where it is and whether it is a key."""
    if isinstance(value, str):
        yield where, value, False
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                yield f"{where}.{key}", key, True
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{where}[{i}]")


def _unknown_step(name: str, spec: WorkflowSpec) -> str:
    close = difflib.get_close_matches(name, list(spec.steps), n=1)
    hint = f"did you mean {close[0]}?" if close else f"the steps are {', '.join(spec.steps)}"
    return f"there is no step {name}: {hint}"


def _ref_or_none(text: str) -> DataRef | None:
    try:
        return parse_ref(text)
    except ValueError:
        return None
