"""The tree drawn in gateway/client/errors.py is the real subclass tree of ClientError.

Every module of the client side (gateway.client and the CLI built on it) is imported, so a
ClientError subclass defined anywhere there is found: it must be drawn under its parent,
naming the module that defines it, and with the statuses `problem_error` picks it for. A
class added, moved or re-parented without redrawing fails here.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass

import gateway.cli
import gateway.client
from gateway.client import errors
from gateway.client.errors import ClientError, ProblemError, problem_error
from tests.drawn_trees import drawn_nodes

HOME = "gateway.client.errors"

# A drawn class's text: its meaning (starting "404:" or "400/422:" when `problem_error`
# picks it for those statuses), and the defining module (under `gateway`) in parentheses
# at the end when it is not HOME.
_TEXT = re.compile(r"(?:(?P<statuses>\d{3}(?:/\d{3})*): )?(?P<text>\S.*?)"
                   r"(?: \((?P<module>\w+(?:\.\w+)+)\))?")


@dataclass(frozen=True)
class Drawn:
    parent: str | None
    module: str


def _drawn(doc: str) -> tuple[dict[str, Drawn], dict[int, str]]:
    """Class name -> drawn parent and module; status -> the class drawn for it."""
    tree: dict[str, Drawn] = {}
    statuses: dict[int, str] = {}
    for node in drawn_nodes(doc):
        match = _TEXT.fullmatch(node.text)
        assert match is not None, f"not a drawn error: {node.text!r}"
        module = f"gateway.{match['module']}" if match["module"] else HOME
        tree[node.name] = Drawn(node.parent, module)
        statuses |= {int(s): node.name for s in (match["statuses"] or "").split("/") if s}
    return tree, statuses


def _subclasses(cls: type[ClientError]) -> list[type[ClientError]]:
    found: list[type[ClientError]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def _real_tree() -> dict[str, Drawn]:
    for package in (gateway.client, gateway.cli):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)
    found = {"ClientError": Drawn(None, HOME)}
    for cls in _subclasses(ClientError):
        bases = [b.__name__ for b in cls.__bases__ if issubclass(b, ClientError)]
        assert len(bases) == 1, f"{cls.__name__} has two ClientError bases: {bases}"
        assert cls.__name__ not in found, f"two classes named {cls.__name__}"
        found[cls.__name__] = Drawn(bases[0], cls.__module__)
    return found


def test_the_drawn_tree_is_the_class_tree() -> None:
    assert errors.__doc__ is not None
    assert _drawn(errors.__doc__)[0] == _real_tree()


def test_the_drawn_statuses_are_the_ones_problem_error_picks() -> None:
    _, drawn = _drawn(errors.__doc__ or "")
    picked = {status: type(problem_error(status, {})).__name__ for status in range(100, 600)}
    assert drawn == {s: name for s, name in picked.items() if name != ProblemError.__name__}


def test_the_reader_of_the_drawing_sees_a_wrong_one() -> None:
    doc = errors.__doc__ or ""
    tree, statuses = _drawn(doc)
    assert tree["SessionExpired"] == Drawn("AuthenticationRequired", HOME)
    assert tree["OAuthError"] == Drawn("ClientError", "gateway.client.oauth")
    assert (statuses[400], statuses[404]) == ("ValidationFailed", "NotFoundError")
    moved = doc.replace("    │   └── SessionExpired     ", "    ├── SessionExpired         ")
    assert _drawn(moved)[0]["SessionExpired"].parent == "ClientError"
    bare = doc.replace(" (client.oauth)", "")
    assert _drawn(bare)[0]["OAuthError"].module == HOME
    assert 409 not in _drawn(doc.replace("409: ", ""))[1]
