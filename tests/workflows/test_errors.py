"""One error tree: every WorkflowError the package defines is drawn in workflows/errors.py,
lives there, and is a ValueError (pydantic validators raise them as they are)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import workflows
from workflows import errors
from workflows.errors import (
    InvalidWorkflow,
    LimitExceeded,
    Problem,
    ProblemKind,
    WorkflowError,
)
from workflows.limits import Limits


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_the_drawn_tree_is_the_class_tree() -> None:
    for module in pkgutil.iter_modules(workflows.__path__):
        importlib.import_module(f"workflows.{module.name}")
    assert errors.__doc__ is not None
    drawn = {name: "WorkflowError" for name in
             re.findall(r"^    (?:├── |└── )(\w+)", errors.__doc__, re.MULTILINE)}
    real = {cls.__name__: cls.__bases__[0].__name__ for cls in _subclasses(WorkflowError)}
    assert drawn == real
    for cls in _subclasses(WorkflowError):
        assert cls.__module__ == "workflows.errors"
        assert issubclass(cls, ValueError)


def test_every_module_is_listed_in_the_package_docstring() -> None:
    assert workflows.__doc__ is not None
    listed = set(re.findall(r"^- (\w+):", workflows.__doc__, re.MULTILINE))
    listed |= set(re.findall(r"; (\w+):", workflows.__doc__))
    assert listed == {m.name for m in pkgutil.iter_modules(workflows.__path__)}


def test_messages() -> None:
    assert str(errors.InvalidArraySpec("say what to write")) == "say what to write"
    assert errors.InvalidDependency("x").message == "x"
    one = InvalidWorkflow([Problem(ProblemKind.CYCLE, "steps.a.needs", "a needs itself")])
    assert str(one) == "The workflow has 1 problem:\n- steps.a.needs: a needs itself"
    two = InvalidWorkflow([Problem(ProblemKind.CYCLE, "a", "x"),
                           Problem(ProblemKind.JOB, "b", "y")])
    assert str(two) == "The workflow has 2 problems:\n- a: x\n- b: y"
    assert [p.kind for p in two.problems] == [ProblemKind.CYCLE, ProblemKind.JOB]
    limit = LimitExceeded("the number of steps", 300, 200, "split the workflow")
    assert str(limit) == ("the number of steps is 300, above the gateway's limit of 200: "
                          "split the workflow")
    assert (limit.value, limit.limit) == (300, 200)


def test_limits_must_be_positive() -> None:
    with pytest.raises(WorkflowError, match="max_steps must be at least 1"):
        Limits(max_steps=0)
