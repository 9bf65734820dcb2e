"""Plainer validation messages: an unknown field of a request body gets a did-you-mean
from the fields allowed at that place (`exectuable` -> `executable`, by difflib), and
pydantic's "Value error, " prefix goes."""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from typing import Any, Union, get_args, get_origin

from fastapi import Request
from pydantic import BaseModel

_VALUE_ERROR = "Value error, "
# pydantic's words for an unknown field, kept: clients may already look for them.
_UNKNOWN = "Extra inputs are not permitted"


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (through Optional, list, dict, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = get_origin(annotation)
    if origin is None:
        return []
    args = get_args(annotation)
    if origin in (dict,):
        args = args[1:]
    if origin not in (list, dict, tuple, set, Union, types.UnionType) and args:
        args = args[:1]  # Annotated[T, ...]
    return [model for arg in args for model in _models_in(arg)]


def _model_at(model: type[BaseModel], path: Sequence[Any]) -> type[BaseModel] | None:
    """The model whose field `path` (a validation error's loc, without 'body') reaches."""
    current: type[BaseModel] | None = model
    for part in path:
        if current is None:
            return None
        if isinstance(part, int):
            continue  # a list position: the model stays the item's
        field = current.model_fields.get(str(part))
        if field is None:
            return None
        found = _models_in(field.annotation)
        current = found[0] if found else None
    return current


def _body_model(request: Request) -> type[BaseModel] | None:
    route = request.scope.get("route")
    field = getattr(route, "body_field", None)
    annotation = getattr(getattr(field, "field_info", None), "annotation", None)
    models = _models_in(annotation)
    return models[0] if models else None


def unknown_field(request: Request, loc: Sequence[Any]) -> str:
    """The message for an unknown body field at `loc`: what is allowed there, or the one
    field it looks like a misspelling of."""
    model = _body_model(request) if loc and loc[0] == "body" else None
    parent = _model_at(model, loc[1:-1]) if model is not None else None
    if parent is None:
        return _UNKNOWN
    allowed = [name for name, f in parent.model_fields.items() if not f.exclude]
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
    if close:
        return f"{_UNKNOWN}; did you mean '{close[0]}'?"
    return f"{_UNKNOWN}; the fields here are " + ", ".join(allowed)


def message(request: Request, error: dict[str, Any]) -> str:
    """A person's message for one pydantic error of a request."""
    if error.get("type") == "extra_forbidden":
        return unknown_field(request, error.get("loc", ()))
    text = str(error.get("msg", ""))
    return text.removeprefix(_VALUE_ERROR)
