"""The tree drawn in gateway/domain/errors.py is the real subclass tree of GatewayError.

Every server-side module of `gateway` is imported, so a GatewayError subclass defined
anywhere there is found: it must be drawn under its parent, naming the module that defines
it, with the status and problem type the API answers it with (gateway/api/problems.py). A
class added, moved, re-parented or re-mapped without redrawing fails here.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass

import gateway
from gateway.api.problem_types import PREFIX, uri_for
from gateway.api.problems import status_of
from gateway.domain import errors
from gateway.domain.errors import GatewayError
from tests.drawn_trees import drawn_nodes

# The client side raises ClientError, never GatewayError (tests/client/test_error_tree.py
# draws that tree). Every other module imports without optional parts: one that cannot
# fails here, rather than hiding the errors it defines.
CLIENT_SIDE = ("gateway.cli", "gateway.client")
HOME = "gateway.domain.errors"

# A drawn class's text: status, problem type, meaning, and the defining module (under
# `gateway`) in parentheses at the end when it is not HOME.
_TEXT = re.compile(r"(?P<status>\d{3}) (?P<type>[a-z-]+)\s+(?P<text>\S.*?)"
                   r"(?: \((?P<module>\w+(?:\.\w+)+)\))?")


@dataclass(frozen=True)
class Drawn:
    parent: str | None
    status: int
    type: str
    module: str


def _drawn_tree(doc: str) -> dict[str, Drawn]:
    """Class name -> drawn parent, status, type and module, from the docstring's tree."""
    tree: dict[str, Drawn] = {}
    for node in drawn_nodes(doc):
        match = _TEXT.fullmatch(node.text)
        assert match is not None, f"not a drawn error: {node.text!r}"
        module = f"gateway.{match['module']}" if match["module"] else HOME
        tree[node.name] = Drawn(node.parent, int(match["status"]), match["type"], module)
    return tree


def _server_modules() -> list[str]:
    names: list[str] = []
    for top in pkgutil.iter_modules(gateway.__path__, "gateway."):
        if top.name in CLIENT_SIDE:
            continue  # not even imported: walk_packages would import its packages
        names.append(top.name)
        if top.ispkg:
            package = importlib.import_module(top.name)
            names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{top.name}.")]
    return names


def _subclasses(cls: type[GatewayError]) -> list[type[GatewayError]]:
    found: list[type[GatewayError]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def _real_tree() -> dict[str, Drawn]:
    """What the classes and the API say, for every GatewayError the gateway defines."""
    for name in _server_modules():
        importlib.import_module(name)
    classes = [GatewayError] + [cls for cls in _subclasses(GatewayError)
                                if cls.__module__.startswith("gateway.")]
    found: dict[str, Drawn] = {}
    for cls in classes:
        bases = [b.__name__ for b in cls.__bases__ if issubclass(b, GatewayError)]
        # A second base would need a notation (adapters/errors.py's "+ Base").
        assert len(bases) <= 1, f"{cls.__name__} has two GatewayError bases: {bases}"
        assert cls.__name__ not in found, f"two classes named {cls.__name__}"
        status = status_of(cls)
        found[cls.__name__] = Drawn(bases[0] if bases else None, status,
                                    uri_for(status).removeprefix(PREFIX), cls.__module__)
    return found


def test_the_drawn_tree_is_the_class_tree() -> None:
    assert errors.__doc__ is not None
    assert _drawn_tree(errors.__doc__) == _real_tree()


def test_every_module_but_the_client_side_is_walked() -> None:
    names = _server_modules()
    assert {"gateway.services.money.bank", "gateway.worker.staging.stage_out",
            "gateway.siteconfig.errors"} <= set(names)
    assert not [name for name in names if name.startswith(CLIENT_SIDE)]


def test_the_reader_of_the_drawing_sees_a_wrong_one() -> None:
    # The parser is what makes the first test able to fail: a re-parented class, another
    # status and a dropped module read differently.
    doc = errors.__doc__ or ""
    right = _drawn_tree(doc)
    assert right["NotFound"] == Drawn("GatewayError", 404, "not-found", HOME)
    assert right["InsufficientFunds"] == Drawn("Invalid", 422, "validation",
                                               "gateway.services.money.bank")
    assert right["NotIsolated"].parent == "NoAccount"
    moved = doc.replace("    │   │   └── NotIsolated    ", "    │   ├── NotIsolated        ")
    assert _drawn_tree(moved)["NotIsolated"].parent == "Invalid"
    other = doc.replace("OffsetMismatch     409 conflict", "OffsetMismatch     422 validation")
    assert (_drawn_tree(other)["OffsetMismatch"].status, right["OffsetMismatch"].status) == (
        422, 409)
    bare = doc.replace(" (services.money.bank)", "")
    assert _drawn_tree(bare)["InsufficientFunds"].module == HOME
