"""Job dependencies as Slurm users write them, and whether a job's have been met.

A job may wait for others: `depends_on: [{job: ID, when: afterok}]` in a spec, or
`--dependency afterok:ID[:ID...][,afterany:ID...]` on the command line (',' = all of them).
The rule follows Slurm's (sbatch(1), slurmctld's test_job_dependency):

    afterok     satisfied when the job COMPLETED (exit code 0); never once it FAILED or was
                CANCELLED
    afterany    satisfied when the job ended, however it ended
    afternotok  satisfied when the job FAILED or was CANCELLED; never once it COMPLETED

A job whose dependency can never be satisfied stays held with a reason, as Slurm's
"DependencyNeverSatisfied" does; the gateway decides whether to cancel it. Jobs never move
backwards out of a final state, so a verdict of "never" never changes.

Only these three types: Slurm's `after` (started), `aftercorr`, `singleton` and the '?'
(any of) separator are refused with a message, not approximated. IDs are the gateway's
job ids (a job may depend on one at another site), not a scheduler's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from rules.text import TextRule
from workflows.errors import InvalidDependency, LimitExceeded
from workflows.limits import DEFAULT_LIMITS, Limits

JOB_ID = TextRule(
    "job id", r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "give the job's whole id in lower case, as `gridgate list` shows it "
    "(e.g. d3eca39f-5b1e-4c5e-9a0e-0c1f2a3b4c5d)")
# Slurm's other types, named so the refusal can say which one it was.
_SLURM_ONLY = frozenset({"after", "aftercorr", "afterburstbuffer", "singleton", "expand"})


class DependencyType(StrEnum):
    """When a dependent job may start, after the job it depends on ends."""

    AFTEROK = "afterok"
    AFTERANY = "afterany"
    AFTERNOTOK = "afternotok"


class Ended(StrEnum):
    """How a job ended: the gateway's final job states (COMPLETED means exit code 0)."""

    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class Readiness(StrEnum):
    """Whether a job's dependencies let it start."""

    SATISFIED = "satisfied"
    WAITING = "waiting"
    NEVER = "never"


class JobDependency(BaseModel):
    """One entry of `depends_on`: the job waited for, and on what outcome."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    job: Annotated[str, AfterValidator(JOB_ID.check),
                   Field(json_schema_extra={"pattern": JOB_ID.json_pattern})]
    when: DependencyType = Field(description=(
        "afterok: after the job completed (exit code 0); afterany: after it ended, however; "
        "afternotok: after it failed or was cancelled."))


@dataclass(frozen=True)
class DependencyStatus:
    """A job's dependencies as a whole: `reason` says which jobs it waits for or why never."""

    readiness: Readiness
    reason: str

    @property
    def slurm_reason(self) -> str | None:
        """What squeue would show for the held job (None when it may start)."""
        return {Readiness.WAITING: "Dependency",
                Readiness.NEVER: "DependencyNeverSatisfied"}.get(self.readiness)


def check_dependencies(dependencies: Sequence[JobDependency],
                       limits: Limits = DEFAULT_LIMITS) -> tuple[JobDependency, ...]:
    """`dependencies` without repeats, or InvalidDependency when two of them contradict
    each other (afterok and afternotok on one job) / LimitExceeded when there are too many."""
    unique = tuple(dict.fromkeys(dependencies))
    if len(unique) > limits.max_dependencies:
        raise LimitExceeded("the number of dependencies", len(unique), limits.max_dependencies,
                            "make one job wait for the others' results instead")
    kinds: dict[str, set[DependencyType]] = {}
    for dep in unique:
        kinds.setdefault(dep.job, set()).add(dep.when)
    for job, when in kinds.items():
        if {DependencyType.AFTEROK, DependencyType.AFTERNOTOK} <= when:
            raise InvalidDependency(
                f"The job would wait for job {job} both to complete (afterok) and to fail "
                "(afternotok), which can never both happen: keep one, or use afterany.")
    return unique


def parse_dependency_option(text: str,
                            limits: Limits = DEFAULT_LIMITS) -> tuple[JobDependency, ...]:
    """The dependencies of a `--dependency` option: TYPE:ID[:ID...] items joined by ','."""
    if len(text) > limits.max_text:
        raise LimitExceeded("the length of the --dependency option", len(text),
                            limits.max_text, "make one job wait for the others instead")
    if "?" in text:
        raise InvalidDependency(
            f"{text!r}: '?' (any of) is not supported; ',' joins dependencies that must all "
            "be satisfied (afterok:ID1,afterany:ID2).")
    if not text:
        raise InvalidDependency("The --dependency option is empty: write afterok:ID, "
                                "afterany:ID or afternotok:ID.")
    found: list[JobDependency] = []
    for item in text.split(","):
        found.extend(_item(text, item))
    return check_dependencies(found, limits)


def format_dependency_option(dependencies: Iterable[JobDependency]) -> str:
    """The `--dependency` text for `dependencies` (consecutive ones of a type share it)."""
    items: list[tuple[DependencyType, list[str]]] = []
    for dep in dependencies:
        if items and items[-1][0] == dep.when:
            items[-1][1].append(dep.job)
        else:
            items.append((dep.when, [dep.job]))
    return ",".join(":".join([when.value, *jobs]) for when, jobs in items)


def dependency_status(dependencies: Sequence[JobDependency],
                      ends: Mapping[str, Ended | None]) -> DependencyStatus:
    """Whether a job with `dependencies` may start, given how each job it depends on ended
    (`ends[id]`: None while that job has not ended; a job missing from `ends` is unknown)."""
    never: list[str] = []
    waiting: list[str] = []
    for dep in dependencies:
        if dep.job not in ends:
            never.append(f"job {dep.job} is not known ({dep.when}:{dep.job})")
            continue
        end = ends[dep.job]
        if end is None:
            waiting.append(f"job {dep.job} ({dep.when})")
        elif dep.when == DependencyType.AFTEROK and end != Ended.COMPLETED:
            never.append(f"job {dep.job} {_past(end)}, so {dep.when}:{dep.job} can never be "
                         "satisfied")
        elif dep.when == DependencyType.AFTERNOTOK and end == Ended.COMPLETED:
            never.append(f"job {dep.job} completed, so {dep.when}:{dep.job} can never be "
                         "satisfied")
    if never:
        return DependencyStatus(Readiness.NEVER, "; ".join(never))
    if waiting:
        return DependencyStatus(Readiness.WAITING, "waiting for " + ", ".join(waiting))
    return DependencyStatus(Readiness.SATISFIED, "dependencies satisfied")


def array_outcome(task_ends: Iterable[Ended | None]) -> Ended | None:
    """How an array job ended as a whole, for the jobs that depend on it: not until every
    task has ended (as in Slurm), then COMPLETED if all completed, FAILED if any failed,
    else CANCELLED."""
    ends = list(task_ends)
    if not ends:
        raise InvalidDependency("an array job has at least one task")
    if any(end is None for end in ends):
        return None
    if all(end == Ended.COMPLETED for end in ends):
        return Ended.COMPLETED
    return Ended.FAILED if Ended.FAILED in ends else Ended.CANCELLED


def _past(end: Ended) -> str:
    return {Ended.COMPLETED: "completed", Ended.FAILED: "failed",
            Ended.CANCELLED: "was cancelled"}[end]


def _item(text: str, item: str) -> list[JobDependency]:
    kind, colon, rest = item.partition(":")
    if not colon:
        if JOB_ID.matches(item):
            raise InvalidDependency(f"{text!r}: say when the job may start: afterok:{item}, "
                                    f"afterany:{item} or afternotok:{item}.")
        raise InvalidDependency(f"{text!r}: {item!r} is not TYPE:ID (afterok:ID, "
                                "afterany:ID or afternotok:ID).")
    if kind in _SLURM_ONLY:
        raise InvalidDependency(f"{text!r}: Slurm's {kind!r} is not supported by the gateway: "
                                "use afterok, afterany or afternotok.")
    if kind not in {t.value for t in DependencyType}:
        raise InvalidDependency(f"{text!r}: {kind!r} is not a dependency type: use afterok, "
                                "afterany or afternotok.")
    found = []
    for job in rest.split(":"):
        if "+" in job:
            raise InvalidDependency(f"{text!r}: a delay after a job ({job!r}) is not "
                                    "supported: give the job id alone.")
        problem = JOB_ID.problem(job)
        if problem is not None:
            raise InvalidDependency(f"{text!r}: {problem}.")
        found.append(JobDependency(job=job, when=DependencyType(kind)))
    return found
