"""Job array specs in Slurm's `--array` syntax: indices, steps, lists, the '%' throttle."""

from __future__ import annotations

import re

import pytest

from workflows.arrays import ARRAY_SPEC, ArraySpec, parse_array
from workflows.errors import InvalidArraySpec, LimitExceeded
from workflows.limits import Limits

ACCEPTED = [
    # Slurm's sbatch(1) examples.
    ("0-15", tuple(range(16)), None),
    ("0,6,16-32", (0, 6, *range(16, 33)), None),
    ("0-15:4", (0, 4, 8, 12), None),
    ("0-15%4", tuple(range(16)), 4),
    ("1-7:2", (1, 3, 5, 7), None),
    ("1,3,5,7", (1, 3, 5, 7), None),
    # The forms.
    ("0-99%10", tuple(range(100)), 10),
    ("0-99:2", tuple(range(0, 100, 2)), None),
    ("1,3,5-9", (1, 3, 5, 6, 7, 8, 9), None),
    # One index; a step longer than the range; repeats and overlaps count once, in order.
    ("7", (7,), None),
    ("0", (0,), None),
    ("3-5:10", (3,), None),
    ("5-9,1,7,1", (1, 5, 6, 7, 8, 9), None),
    ("0-3,2-5%1", (0, 1, 2, 3, 4, 5), 1),
    # A throttle above the task count is allowed (as in Slurm): no effect.
    ("0-1%50", (0, 1), 50),
    ("007", (7,), None),
]


@pytest.mark.parametrize(("text", "indices", "throttle"), ACCEPTED)
def test_accepted_specs(text: str, indices: tuple[int, ...], throttle: int | None) -> None:
    assert parse_array(text) == ArraySpec(text=text, indices=indices, throttle=throttle)


REFUSED = [
    ("", "The array spec is empty: name the task indices, e.g. 0-99, 0-99:2, 1,3,5-9 or "
         "0-99%10."),
    ("%4", "The array spec '%4' names no index before '%': e.g. 0-99, 0-99:2, 1,3,5-9 or "
           "0-99%10."),
    ("1,,3", "The array spec '1,,3' has an empty element (two commas, or a comma at an end): "
             "e.g. 0-99, 0-99:2, 1,3,5-9 or 0-99%10."),
    ("1,3,", "The array spec '1,3,' has an empty element (two commas, or a comma at an end): "
             "e.g. 0-99, 0-99:2, 1,3,5-9 or 0-99%10."),
    ("9-0", "The range '9-0' in the array spec '9-0' runs backwards: write 0-9."),
    ("0-9:0", "The range '0-9:0' in the array spec '0-9:0' has a step of 0: the step is at "
              "least 1."),
    ("0-9%0", "The array spec '0-9%0' lets 0 tasks run at once: give at least 1 after '%', or "
              "leave the '%' out for no limit."),
    ("-1", "'-1' is not a valid job array element: write an index (7), a range (0-99) or a "
           "range with a step (0-99:2) (in the array spec '-1')."),
    ("0-9%", "'' is not a valid job array throttle: write the number of tasks that may run at "
             "once after '%' (0-99%10) (in the array spec '0-9%')."),
    ("0-9%2%3", "'2%3' is not a valid job array throttle: write the number of tasks that may "
                "run at once after '%' (0-99%10) (in the array spec '0-9%2%3')."),
    ("5:2", "'5:2' is not a valid job array element: write an index (7), a range (0-99) or a "
            "range with a step (0-99:2) (in the array spec '5:2')."),
]


@pytest.mark.parametrize(("text", "message"), REFUSED)
def test_refused_specs_say_what_to_write(text: str, message: str) -> None:
    with pytest.raises(InvalidArraySpec) as caught:
        parse_array(text)
    assert str(caught.value) == message


# Matched whole: what a `^...$` check would let through.
@pytest.mark.parametrize("text", ["0-9\n", " 0-9", "0-9 ", "0 - 9", "0x10", "٣", "1e3",
                                  "0-9:", "0-9:2:3", "0-9%-1", "0-9%1\n", "[0-9]",
                                  "12345678901"])
def test_anything_else_is_refused(text: str) -> None:
    with pytest.raises(InvalidArraySpec):
        parse_array(text)


LIMITS = Limits(max_array_tasks=100, max_array_index=1000, max_text=40)


@pytest.mark.parametrize(("text", "message"), [
    ("0-100", "the number of tasks in the array '0-100' is 101, above the gateway's limit of "
              "100: split the work into fewer, larger tasks"),
    # Counted before the overlap is removed: the sum of the parts is what is checked.
    ("0-59,0-59", "the number of tasks in the array '0-59,0-59' is 120, above the gateway's "
                  "limit of 100: split the work into fewer, larger tasks"),
    ("1001", "the highest index of the array '1001' is 1001, above the gateway's limit of "
             "1000: number the tasks from a lower index"),
    ("1," * 20 + "2", "the length of the array spec is 41, above the gateway's limit of 40: "
                      "write ranges (0-9999) rather than every index"),
])
def test_limits_are_parameters(text: str, message: str) -> None:
    with pytest.raises(LimitExceeded) as caught:
        parse_array(text, LIMITS)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_limits_at_their_edge_are_accepted() -> None:
    assert parse_array("0-99", LIMITS).count == 100
    assert parse_array("1000", LIMITS).indices == (1000,)
    # The default limits take Slurm's largest index, and no larger.
    assert parse_array("4000000").indices == (4_000_000,)
    with pytest.raises(LimitExceeded):
        parse_array("4000001")
    with pytest.raises(LimitExceeded):
        parse_array("0-4000000")


def test_each_task_sees_its_index() -> None:
    spec = parse_array("3-9:3")
    assert spec.environment(6) == {
        "GRIDGATE_ARRAY_TASK_ID": "6", "GRIDGATE_ARRAY_TASK_COUNT": "3",
        "GRIDGATE_ARRAY_TASK_MIN": "3", "GRIDGATE_ARRAY_TASK_MAX": "9"}
    with pytest.raises(InvalidArraySpec, match="4 is not an index of the array '3-9:3'"):
        spec.environment(4)


@pytest.mark.parametrize(("text", "not_started", "running", "expected"), [
    ("0-9%3", range(10), 0, (0, 1, 2)),
    ("0-9%3", range(3, 10), 2, (3,)),
    ("0-9%3", range(3, 10), 3, ()),
    # More running than the throttle (it was lowered, say): none starts, none is negative.
    ("0-9%3", range(5, 10), 5, ()),
    ("0-9%3", [9, 4, 7], 1, (4, 7)),
    ("0-9", [9, 4, 7], 6, (4, 7, 9)),
    ("0-9%3", [], 0, ()),
])
def test_the_throttle_bounds_the_tasks_running_at_once(
        text: str, not_started: list[int], running: int, expected: tuple[int, ...]) -> None:
    assert parse_array(text).tasks_to_start(list(not_started), running) == expected


def test_tasks_to_start_refuses_an_index_of_another_array() -> None:
    with pytest.raises(InvalidArraySpec, match="11 is not an index of the array '0-9%3'"):
        parse_array("0-9%3").tasks_to_start([1, 11], 0)


def test_the_whole_syntax_rule_agrees_with_the_parser() -> None:
    # For the schema: every accepted spec has the form; a refused one has not, unless what
    # is wrong is a value (a backwards range, a step or throttle of 0), not the form.
    semantic = {"9-0", "0-9:0", "0-9%0"}
    for text, *_ in ACCEPTED:
        assert ARRAY_SPEC.matches(text)
        assert re.search(ARRAY_SPEC.json_pattern, text)
    for text, _ in REFUSED:
        assert ARRAY_SPEC.matches(text) == (text in semantic), text
