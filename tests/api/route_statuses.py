"""The error statuses a route's own code can answer, read from that code (ast).

A route answers a status by raising a GatewayError or an AdapterError (the API maps each
class to a status in one place, gateway.api.problems.status_of) or by returning
`problem(STATUS, ...)`. This follows the route function into every function of the project
it calls by name (`f(...)`, `module.f(...)`), transitively, and collects those raises and
returns, except where a `try` around them catches the class. Calls of methods on objects
(`runtime.adapter(site).submit(...)`) are not followed: what this finds is a subset of
what a route can answer, each with the chain of calls that reaches it.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import typing
from collections.abc import Callable, Iterator
from types import FunctionType
from typing import Any

from adapters.errors import AdapterError
from gateway.api.problems import problem, status_of
from gateway.domain.errors import GatewayError

PROJECT = ("gateway.", "adapters.", "containers.", "workflows.")
ERRORS = (GatewayError, AdapterError)
# What an error or a status was found from: the names of the functions on the way.
Via = tuple[str, ...]


def route_statuses(endpoint: Callable[..., Any]) -> dict[int, Via]:
    """Each error status `endpoint` can answer, with a chain of calls that reaches it."""
    found: dict[int, Via] = {}
    for raised, via in _Walk.of(endpoint).items():
        status = raised if isinstance(raised, int) else status_of(raised)
        if status not in found or len(via) < len(found[status]):
            found[status] = via
    return found


def _source(fn: FunctionType) -> ast.AST | None:
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):
        return None


def _error_class(value: object) -> type[Exception] | None:
    if isinstance(value, type) and issubclass(value, ERRORS):
        return value
    if isinstance(value, FunctionType):  # raise refused(): a function making the error
        try:
            returns = typing.get_type_hints(value).get("return")
        except (NameError, TypeError):
            return None
        return _error_class(returns)
    return None


class _Walk(ast.NodeVisitor):
    """One function's raises, problem() returns and project calls, minus what it catches."""

    _cache: dict[FunctionType, dict[type[Exception] | int, Via]] = {}
    _open: set[FunctionType] = set()

    @classmethod
    def of(cls, fn: Callable[..., Any]) -> dict[type[Exception] | int, Via]:
        """What `fn` raises or answers, each with the calls from `fn` to it."""
        fn = inspect.unwrap(fn)
        if not isinstance(fn, FunctionType) or fn in cls._open:
            return {}
        if fn not in cls._cache:
            cls._open.add(fn)
            walk = cls(fn)
            tree = _source(fn)
            if tree is not None:
                walk.visit(tree)
            cls._open.discard(fn)
            cls._cache[fn] = walk.found
        return {k: (fn.__qualname__, *via) for k, via in cls._cache[fn].items()}

    def __init__(self, fn: FunctionType) -> None:
        self.names = fn.__globals__
        self.caught: list[tuple[type[BaseException], ...]] = []
        self.found: dict[type[Exception] | int, Via] = {}

    def _resolve(self, node: ast.expr) -> object:
        if isinstance(node, ast.Name):
            return self.names.get(node.id, getattr(builtins, node.id, None))
        if isinstance(node, ast.Attribute):
            base = self._resolve(node.value)
            return None if base is None else getattr(base, node.attr, None)
        return None

    def _classes(self, node: ast.expr | None) -> Iterator[type[BaseException]]:
        if node is None:  # a bare `except:`
            yield BaseException
        elif isinstance(node, ast.Tuple):
            for element in node.elts:
                yield from self._classes(element)
        elif isinstance(kind := self._resolve(node), type) and issubclass(kind, BaseException):
            yield kind

    def _add(self, raised: type[Exception] | int, via: Via) -> None:
        if isinstance(raised, type) and any(issubclass(raised, c) for c in self._catching()):
            return
        if raised not in self.found or len(via) < len(self.found[raised]):
            self.found[raised] = via

    def _catching(self) -> Iterator[type[BaseException]]:
        for classes in self.caught:
            yield from classes

    def visit_Try(self, node: ast.Try) -> None:
        self.caught.append(tuple(c for h in node.handlers for c in self._classes(h.type)))
        for statement in node.body:
            self.visit(statement)
        self.caught.pop()
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    def visit_Raise(self, node: ast.Raise) -> None:
        made = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if made is not None and (kind := _error_class(self._resolve(made))) is not None:
            self._add(kind, ())
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        callee = self._resolve(node.func)
        status = node.args[0] if node.args else None
        if (callee is problem and isinstance(status, ast.Constant)
                and isinstance(status.value, int)):
            self._add(status.value, ("problem()",))
        elif (isinstance(callee, FunctionType)
              and inspect.unwrap(callee).__module__.startswith(PROJECT)):
            for raised, via in _Walk.of(callee).items():
                self._add(raised, via)
        self.generic_visit(node)
