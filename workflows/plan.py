"""A workflow expanded into step instances: each a job with its values filled in, the
instances it waits for, and its inputs resolved to (producer instance, path) pairs.

An instance's id is its step's name, or `STEP[i]` for the i-th combination of the step's
matrix (0-based, in `matrix.expand` order); its label shows the values (`solve[n=4, mesh=fine]`).
An instance waits for every instance of each step in `needs` and for the instances its
inputs come from. Instances are listed producers first, so a plan can be walked in order.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from workflows import graph
from workflows.errors import InvalidWorkflow, Problem, ProblemKind, UnknownInstance
from workflows.limits import DEFAULT_LIMITS, Limits
from workflows.matrix import Values, expand, substitute
from workflows.model import Step, WorkflowSpec, parse_spec
from workflows.paths import is_pattern, matches, path_problem
from workflows.refs import DataRef, parse_ref
from workflows.retry import RetryPolicy
from workflows.validate import TEMPLATED, check_limits, step_edges, validate_spec


@dataclass(frozen=True)
class ResolvedInput:
    """An input of one instance: `path` in `producer`'s job directory (a file, or one of its
    output globs) to `dest` in this one's; with `into_directory`, files land at
    DEST/<their path>."""

    producer: str
    path: str
    dest: str
    into_directory: bool


@dataclass(frozen=True)
class Instance:
    """One job of the workflow: a step, or one combination of its matrix."""

    id: str
    step: str
    index: int | None
    values: Values
    job: dict[str, Any]
    needs: tuple[str, ...]
    inputs: tuple[ResolvedInput, ...]
    retry: RetryPolicy

    @property
    def label(self) -> str:
        """The id with the values shown: `solve[n=4, mesh=fine]`."""
        return _label(self.step, self.values)


@dataclass(frozen=True)
class Plan:
    """The instances of a workflow, each after those it waits for."""

    name: str
    fail_fast: bool
    instances: tuple[Instance, ...]

    def __getitem__(self, instance_id: str) -> Instance:
        found = self._by_id.get(instance_id)
        if found is None:
            raise UnknownInstance(f"the workflow {self.name!r} has no step instance "
                                  f"{instance_id!r}")
        return found

    def __contains__(self, instance_id: object) -> bool:
        return instance_id in self._by_id

    @cached_property
    def _by_id(self) -> dict[str, Instance]:
        return {i.id: i for i in self.instances}

    @cached_property
    def ids(self) -> tuple[str, ...]:
        return tuple(i.id for i in self.instances)


def plan_workflow(data: Mapping[str, Any], limits: Limits = DEFAULT_LIMITS) -> Plan:
    """The plan of the workflow spec `data`, or InvalidWorkflow naming every problem, or
    LimitExceeded."""
    spec = parse_spec(data, limits)
    check_limits(spec, limits)
    problems = validate_spec(spec)
    if problems:
        raise InvalidWorkflow(problems)
    return make_plan(spec)


def workflow_problems(data: Mapping[str, Any], limits: Limits = DEFAULT_LIMITS) -> list[Problem]:
    """Every problem of `data` as a workflow ([] when it can run); LimitExceeded is raised."""
    try:
        plan_workflow(data, limits)
    except InvalidWorkflow as exc:
        return list(exc.problems)
    return []


def make_plan(spec: WorkflowSpec) -> Plan:
    """The plan of a spec `validate_spec` found no problem in; InvalidWorkflow for problems
    that depend on the instances' values (an input path no output of its producer matches)."""
    order = graph.topological_order(list(spec.steps), step_edges(spec))
    combos = {name: expand(step.matrix) for name, step in spec.steps.items()}
    ids = {name: [_id(name, i, bool(spec.steps[name].matrix)) for i in range(len(combos[name]))]
           for name in spec.steps}
    outputs = {ids[name][i]: [substitute(g, dict(values))
                              for g in spec.steps[name].job.get("outputs", [])]
               for name in spec.steps for i, values in enumerate(combos[name])}
    labels = {ids[name][i]: _label(name, values)
              for name in spec.steps for i, values in enumerate(combos[name])}
    instances: list[Instance] = []
    problems: list[Problem] = []
    position: dict[str, int] = {}
    for name in order:
        step = spec.steps[name]
        for i, values in enumerate(combos[name]):
            instance_id = ids[name][i]
            needs = [pid for needed in step.needs for pid in ids[needed]]
            inputs: list[ResolvedInput] = []
            for k, item in enumerate(step.inputs):
                where = f"steps.{name}.inputs[{k}]"
                prefix = f"{labels[instance_id]}: " if step.matrix else ""
                found = list(_resolve(parse_ref(item.source), substitute(item.dest, dict(values)),
                                      dict(values), spec, ids, combos, outputs, labels))
                for field, message in (f for f in found if isinstance(f, tuple)):
                    problems.append(Problem(ProblemKind.DATA_EDGE, f"{where}.{field}",
                                            prefix + message))
                for resolved in (f for f in found if isinstance(f, ResolvedInput)):
                    if resolved.dest in {r.dest for r in inputs}:
                        problems.append(Problem(ProblemKind.DATA_EDGE, f"{where}.dest", (
                            f"{prefix}another input already goes to {resolved.dest!r}: give "
                            "each input its own dest")))
                    inputs.append(resolved)
                    needs.append(resolved.producer)
            position[instance_id] = len(instances)
            instances.append(Instance(
                id=instance_id, step=name, index=i if step.matrix else None, values=values,
                job=_job(step, dict(values)),
                needs=tuple(sorted(set(needs), key=position.__getitem__)),
                inputs=tuple(inputs), retry=step.retry))
    if problems:
        raise InvalidWorkflow(_first_per_place(problems))
    return Plan(name=spec.name, fail_fast=spec.fail_fast, instances=tuple(instances))


def _resolve(ref: DataRef, dest: str, values: dict[str, str], spec: WorkflowSpec,
             ids: Mapping[str, list[str]], combos: Mapping[str, list[Values]],
             outputs: Mapping[str, list[str]], labels: Mapping[str, str],
             ) -> Iterator[ResolvedInput | tuple[str, str]]:
    """The inputs one `from:` gives an instance, or (field, problem) pairs."""
    path = substitute(ref.path, values)
    bad = False
    for field, text in (("from", path), ("dest", dest)):
        problem = path_problem(text)
        if problem is not None:
            bad = True
            yield field, f"{text!r} {problem}"
    if bad:
        return
    producers = ids[ref.step]
    if isinstance(ref.selector, tuple):
        wanted = {key: substitute(value, values) for key, value in ref.selector}
        key = tuple((k, wanted[k]) for k in spec.steps[ref.step].matrix)
        if key not in combos[ref.step]:
            shown = ", ".join(f"{k}={v}" for k, v in key)
            yield "from", f"step {ref.step} has no instance with {shown}"
            return
        producers = [producers[combos[ref.step].index(key)]]
    for j, producer in enumerate(producers):
        problem = _output_problem(path, outputs[producer], labels[producer])
        if problem is not None:
            yield "from", problem
            return
        if isinstance(ref.selector, str):  # ALL: one directory per producer instance
            yield ResolvedInput(producer, path, f"{dest}/{j}", into_directory=True)
        else:
            yield ResolvedInput(producer, path, dest, into_directory=is_pattern(path))


def _output_problem(path: str, globs: list[str], producer: str) -> str | None:
    shown = ", ".join(repr(g) for g in globs)
    if not globs:
        return (f"{producer} declares no outputs: add {path!r} (or a glob matching it) to its "
                "job's outputs")
    if is_pattern(path):
        if path in globs:
            return None
        return (f"{path!r} is a glob: write it exactly as one of {producer}'s outputs "
                f"({shown}), or name one file")
    if any(matches(g, path) for g in globs):
        return None
    return f"no output of {producer} matches {path!r}: its outputs are {shown}"


def _job(step: Step, values: dict[str, str]) -> dict[str, Any]:
    # A fresh copy per instance: the gateway may add to it (a label, the resolved inputs).
    job = copy.deepcopy(step.job)
    for field in TEMPLATED:
        if isinstance(job.get(field), str):
            job[field] = substitute(job[field], values)
        elif isinstance(job.get(field), list):
            job[field] = [substitute(v, values) for v in job[field]]
        elif isinstance(job.get(field), dict):
            job[field] = {k: substitute(v, values) for k, v in job[field].items()}
    return job


def _id(step: str, index: int, has_matrix: bool) -> str:
    return f"{step}[{index}]" if has_matrix else step


def _label(step: str, values: Values) -> str:
    if not values:
        return step
    return f"{step}[{', '.join(f'{k}={v}' for k, v in values)}]"


def _first_per_place(problems: list[Problem]) -> list[Problem]:
    # A problem repeated by every instance of a matrix is shown once, with a count.
    first: dict[str, Problem] = {}
    count: dict[str, int] = {}
    for problem in problems:
        first.setdefault(problem.where, problem)
        count[problem.where] = count.get(problem.where, 0) + 1
    return [Problem(p.kind, p.where, p.message + (
        f" (and {count[w] - 1} more instance{'s' if count[w] > 2 else ''})"
        if count[w] > 1 else "")) for w, p in first.items()]
