"""Site config errors: every problem names its field and says what to write instead."""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from gateway.domain.errors import Invalid
from gateway.siteconfig.fields import FieldIssues


@dataclass(frozen=True)
class FieldProblem:
    """One problem: the dotted field (`ssh.host_keys`, `partitions[batch].max_nodes`)."""

    field: str
    message: str


class SiteConfigError(Invalid):
    """A site config that cannot be used; `problems` lists each field to fix."""

    def __init__(self, source: str, problems: Sequence[FieldProblem]) -> None:
        self.source = source
        self.problems = list(problems)
        shown = "; ".join(f"{p.field}: {p.message}" for p in self.problems[:5])
        more = f" (and {len(self.problems) - 5} more)" if len(self.problems) > 5 else ""
        super().__init__(f"{source}: invalid site configuration: {shown}{more}",
                         errors=[{"field": p.field, "message": p.message}
                                 for p in self.problems])

    def render(self) -> str:
        """Several lines for a terminal: the file, then one line per problem."""
        count = len(self.problems)
        head = f"{self.source}: invalid site configuration ({count} problem" \
               f"{'' if count == 1 else 's'}):"
        return "\n".join([head, *(f"  {p.field}: {p.message}" for p in self.problems)])


def _unwrap(annotation: Any) -> Any:
    """The model, list or dict inside Optional/Annotated wrappers."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _step(current: Any, part: int | str) -> Any:
    """The annotation one location step below `current` (None when it cannot follow)."""
    current = _unwrap(current)
    if _is_model(current):
        info = current.model_fields.get(str(part))
        return info.annotation if info is not None else None
    origin = typing.get_origin(current)
    if origin is list and isinstance(part, int):
        return typing.get_args(current)[0]
    if origin is dict:
        return typing.get_args(current)[1]
    return None


def _clean(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    # pydantic adds internal step names (function-after[...], tagged unions): not fields.
    return tuple(p for p in loc if not (isinstance(p, str) and "[" in p))


def _field_text(loc: tuple[int | str, ...], data: Any) -> str:
    """`partitions[batch].max_nodes`: list items are shown by their `name` when they have one."""
    text, raw = "", data
    for part in loc:
        if isinstance(part, int):
            item = raw[part] if isinstance(raw, list) and 0 <= part < len(raw) else None
            name = item.get("name") if isinstance(item, dict) else None
            text += f"[{name}]" if isinstance(name, str) and name else f"[{part}]"
            raw = item
        else:
            text = f"{text}.{part}" if text else part
            raw = raw.get(part) if isinstance(raw, dict) else None
    return text or "(config)"


def _lookup(root: type[BaseModel], loc: tuple[int | str, ...]
            ) -> tuple[type[BaseModel] | None, FieldInfo | None]:
    """(the model holding the last step, that field's info), as far as the schema knows."""
    current: Any = root
    for part in loc[:-1]:
        current = _step(current, part)
    holder = _unwrap(current)
    if not _is_model(holder) or not loc:
        return (holder if _is_model(holder) else None), None
    return holder, holder.model_fields.get(str(loc[-1]))


def _got(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _message(err: ErrorDetails, holder: type[BaseModel] | None, info: FieldInfo | None) -> str:
    kind, msg, value = err["type"], err["msg"], err.get("input")
    if kind == "missing":
        hint = f" ({info.description})" if info is not None and info.description else ""
        return f"required: add it{hint}"
    if kind == "extra_forbidden":
        allowed = ", ".join(holder.model_fields) if holder is not None else "none"
        return f"unknown field: remove it or fix its spelling (allowed here: {allowed})"
    if kind == "string_type":
        if isinstance(value, bool | int | float):
            return (f"expected text, got {_got(value)}: quote it in YAML (unquoted 22.05 is "
                    "a number; yes/no/on/off are booleans)")
        return f"expected text, got {_got(value)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping of `key: value` lines, got {_got(value)}"
    if kind == "list_type":
        return f"expected a list (lines starting with '- '), got {_got(value)}"
    if kind == "too_short" and isinstance(value, list):
        return "must not be empty: add at least one entry"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {_got(value)}"
    if kind == "value_error":
        return msg.removeprefix("Value error, ")
    return f"{msg[0].lower()}{msg[1:]}; got {_got(value)}"


def problems_from(exc: ValidationError, root: type[BaseModel], data: Any) -> list[FieldProblem]:
    """Readable problems from a pydantic ValidationError raised validating `data`."""
    problems: list[FieldProblem] = []
    for err in exc.errors():
        loc = _clean(tuple(err["loc"]))
        ctx_error = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_error, FieldIssues):
            for sub, message in ctx_error.issues:
                problems.append(FieldProblem(_field_text(loc + sub, data), message))
            continue
        holder, info = _lookup(root, loc)
        if err["type"] == "extra_forbidden":
            holder, info = _lookup(root, (*loc[:-1], "")) if loc else (root, None)
        problems.append(FieldProblem(_field_text(loc, data), _message(err, holder, info)))
    return problems
