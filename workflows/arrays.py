"""Job arrays as Slurm writes them (`sbatch --array`): which task indices, how many at once.

    0-99        indices 0 to 99
    0-15:4      0, 4, 8, 12 (a step after ':')
    1,3,5-9     a list of single indices and ranges
    0-99%10     at most 10 tasks running at once (the throttle, after '%')

As in Slurm, indices start at 0, a list may repeat or overlap (each index counts once) and
the throttle may exceed the task count. Unlike Slurm, a spec is refused when it names no
index, when a range runs backwards or when the throttle is 0, rather than guessed at.
Each task sees its index in GRIDGATE_ARRAY_TASK_ID (the gateway runs arrays on every kind
of site, not only Slurm, so the name is the gateway's own).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from rules.text import TextRule
from workflows.errors import InvalidArraySpec, LimitExceeded
from workflows.limits import DEFAULT_LIMITS, Limits

# Ten digits at most: the limits are far below, and int() never sees a thousand-digit number.
ARRAY_ELEMENT = TextRule(
    "job array element",
    r"(?P<start>[0-9]{1,10})(?:-(?P<stop>[0-9]{1,10})(?::(?P<step>[0-9]{1,10}))?)?",
    "write an index (7), a range (0-99) or a range with a step (0-99:2)")
ARRAY_THROTTLE = TextRule(
    "job array throttle", r"[0-9]{1,10}",
    "write the number of tasks that may run at once after '%' (0-99%10)")

# The whole syntax at once, for a JSON Schema `pattern` (`ARRAY_SPEC.json_pattern`): the
# parser checks element by element, to say which one is wrong.
_ELEMENT = r"[0-9]{1,10}(?:-[0-9]{1,10}(?::[0-9]{1,10})?)?"
ARRAY_SPEC = TextRule(
    "job array spec", rf"{_ELEMENT}(?:,{_ELEMENT})*(?:%[0-9]{{1,10}})?",
    "name the task indices, e.g. 0-99, 0-99:2, 1,3,5-9 or 0-99%10")

TASK_ID_ENV = "GRIDGATE_ARRAY_TASK_ID"
TASK_COUNT_ENV = "GRIDGATE_ARRAY_TASK_COUNT"
TASK_MIN_ENV = "GRIDGATE_ARRAY_TASK_MIN"
TASK_MAX_ENV = "GRIDGATE_ARRAY_TASK_MAX"

_FORMS = "e.g. 0-99, 0-99:2, 1,3,5-9 or 0-99%10"


@dataclass(frozen=True)
class ArraySpec:
    """A parsed array spec: `indices` sorted, each once; `throttle` None when unlimited."""

    text: str
    indices: tuple[int, ...]
    throttle: int | None

    @property
    def count(self) -> int:
        """How many tasks the array has."""
        return len(self.indices)

    def environment(self, index: int) -> dict[str, str]:
        """The variables task `index` runs with (Slurm's SLURM_ARRAY_TASK_* under our prefix)."""
        if index not in self.indices:
            raise InvalidArraySpec(f"{index} is not an index of the array {self.text!r}")
        return {TASK_ID_ENV: str(index), TASK_COUNT_ENV: str(self.count),
                TASK_MIN_ENV: str(self.indices[0]), TASK_MAX_ENV: str(self.indices[-1])}

    def tasks_to_start(self, not_started: Collection[int], running: int) -> tuple[int, ...]:
        """The tasks of `not_started` that may start now, lowest index first, given that
        `running` tasks of the array have started and not ended (the throttle counts them)."""
        unknown = sorted(set(not_started) - set(self.indices))
        if unknown:
            raise InvalidArraySpec(f"{unknown[0]} is not an index of the array {self.text!r}")
        room = len(not_started) if self.throttle is None else max(0, self.throttle - running)
        return tuple(sorted(not_started)[:room])


def parse_array(text: str, limits: Limits = DEFAULT_LIMITS) -> ArraySpec:
    """The array `text` names (Slurm's `--array` syntax), or InvalidArraySpec/LimitExceeded
    saying what to write instead."""
    if len(text) > limits.max_text:
        raise LimitExceeded("the length of the array spec", len(text), limits.max_text,
                            "write ranges (0-9999) rather than every index")
    if not text:
        raise InvalidArraySpec(f"The array spec is empty: name the task indices, {_FORMS}.")
    body, percent, throttle_text = text.partition("%")
    if not body:
        raise InvalidArraySpec(f"The array spec {text!r} names no index before '%': {_FORMS}.")
    throttle = _throttle(text, throttle_text) if percent else None
    ranges = [_element(text, part) for part in body.split(",")]
    # Counted before listing: "0-4000000" is refused without building four million ints.
    total = sum(len(r) for r in ranges)
    if total > limits.max_array_tasks:
        raise LimitExceeded(f"the number of tasks in the array {text!r}", total,
                            limits.max_array_tasks, "split the work into fewer, larger tasks")
    indices = tuple(sorted({i for r in ranges for i in r}))
    if indices[-1] > limits.max_array_index:
        raise LimitExceeded(f"the highest index of the array {text!r}", indices[-1],
                            limits.max_array_index, "number the tasks from a lower index")
    return ArraySpec(text=text, indices=indices, throttle=throttle)


def _element(text: str, part: str) -> range:
    if not part:
        raise InvalidArraySpec(f"The array spec {text!r} has an empty element (two commas, "
                               f"or a comma at an end): {_FORMS}.")
    match = ARRAY_ELEMENT.fullmatch(part)
    if match is None:
        raise InvalidArraySpec(f"{ARRAY_ELEMENT.problem(part)} (in the array spec {text!r}).")
    start = int(match["start"])
    stop = int(match["stop"]) if match["stop"] is not None else start
    step = int(match["step"]) if match["step"] is not None else 1
    if stop < start:
        raise InvalidArraySpec(f"The range {part!r} in the array spec {text!r} runs backwards: "
                               f"write {stop}-{start}.")
    if step == 0:
        raise InvalidArraySpec(f"The range {part!r} in the array spec {text!r} has a step of 0: "
                               "the step is at least 1.")
    return range(start, stop + 1, step)


def _throttle(text: str, throttle_text: str) -> int:
    if not ARRAY_THROTTLE.matches(throttle_text):
        raise InvalidArraySpec(f"{ARRAY_THROTTLE.problem(throttle_text)} "
                               f"(in the array spec {text!r}).")
    throttle = int(throttle_text)
    if throttle == 0:
        raise InvalidArraySpec(f"The array spec {text!r} lets 0 tasks run at once: give at "
                               "least 1 after '%', or leave the '%' out for no limit.")
    return throttle
