"""One error tree: every ContainerError the package defines is drawn in containers/errors.py,
lives there, and is a ValueError (pydantic validators raise them as they are)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import containers
from containers import errors
from containers.errors import ContainerError


def _subclasses(cls: type) -> set[type]:
    found: set[type] = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_the_drawn_tree_is_the_class_tree() -> None:
    for module in pkgutil.walk_packages(containers.__path__, "containers."):
        importlib.import_module(module.name)
    assert errors.__doc__ is not None
    drawn = {name: "ContainerError" for name in
             re.findall(r"^    (?:├── |└── )(\w+)", errors.__doc__, re.MULTILINE)}
    real = {cls.__name__: cls.__bases__[0].__name__ for cls in _subclasses(ContainerError)}
    assert drawn == real
    for cls in _subclasses(ContainerError):
        assert cls.__module__ == "containers.errors"
        assert issubclass(cls, ValueError)
    assert str(errors.InvalidBind("say what to write")) == "say what to write"
    assert errors.InvalidBind("x").message == "x"
