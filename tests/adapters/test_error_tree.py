"""The tree drawn in adapters/errors.py is the real subclass tree of AdapterError.

Every adapter module is imported, so an AdapterError subclass defined anywhere in
`adapters` is found: it must be drawn, with its bases and its `transient` flag, and be
defined in adapters.errors (the one place). A class added, moved or re-parented without
redrawing fails here.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass

import adapters
from adapters import errors
from adapters.errors import AdapterError
from tests.drawn_trees import drawn_nodes

# A drawn class's text: "+ Name:" starts it when the class has a second base;
# "(transient)" ends it when it is transient.
_SECOND_BASE = re.compile(r"\+ (?P<base>[A-Z]\w*): .*")


@dataclass(frozen=True)
class Drawn:
    bases: tuple[str, ...]
    transient: bool


def _drawn_tree(doc: str) -> dict[str, Drawn]:
    """Class name -> drawn bases and transient flag, from the docstring's tree block."""
    tree: dict[str, Drawn] = {}
    for node in drawn_nodes(doc):
        second = _SECOND_BASE.fullmatch(node.text)
        bases = ((node.parent,) if node.parent else ()) + ((second["base"],) if second else ())
        tree[node.name] = Drawn(bases, node.text.endswith("(transient)"))
    return tree


def _real_tree() -> dict[str, Drawn]:
    for module in pkgutil.walk_packages(adapters.__path__, "adapters."):
        importlib.import_module(module.name)
    found: dict[str, Drawn] = {}
    todo: list[type[AdapterError]] = [AdapterError]
    while todo:
        cls = todo.pop()
        bases = tuple(b.__name__ for b in cls.__bases__ if issubclass(b, AdapterError))
        found[cls.__name__] = Drawn(bases, cls.transient)
        todo.extend(cls.__subclasses__())
    return found


def test_the_drawn_tree_is_the_class_tree() -> None:
    assert errors.__doc__ is not None
    assert _drawn_tree(errors.__doc__) == _real_tree()


def test_every_adapter_error_is_defined_in_adapters_errors() -> None:
    for name in _real_tree():
        assert getattr(errors, name).__module__ == "adapters.errors", name


def test_the_reader_of_the_drawing_sees_a_wrong_one() -> None:
    # The parser is what makes the first test able to fail: a re-parented class and a
    # dropped "(transient)" read differently.
    right = _drawn_tree(errors.__doc__ or "")
    moved = (errors.__doc__ or "").replace(
        "        │   └── CircuitOpen      recent", "        ├── CircuitOpen          recent")
    assert _drawn_tree(moved)["CircuitOpen"].bases == ("TransportError",)
    assert right["CircuitOpen"].bases == ("ConnectionFailed",)
    flat = (errors.__doc__ or "").replace("did not finish in time (transient)",
                                          "did not finish in time")
    assert not _drawn_tree(flat)["CommandTimeout"].transient
    assert right["CommandTimeout"] == Drawn(("TransportError", "SiteUnavailable"), True)
