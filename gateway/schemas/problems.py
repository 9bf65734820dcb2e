"""The RFC 9457 problem document every error response carries."""

from __future__ import annotations

from typing import NotRequired

from pydantic import ConfigDict, with_config

# pydantic reads TypedDicts from typing_extensions on Python < 3.12.
from typing_extensions import TypedDict


class FieldProblem(TypedDict):
    """One invalid field of a request: `inputs[1].dest`, `resources.walltime`..."""

    field: str
    message: str


# Some problems carry members of their own (`offset`, `incident`, `limit`...).
@with_config(ConfigDict(extra="allow"))
class Problem(TypedDict):
    """An error. `type` names its kind (`/problems/not-found`, `/problems/validation`...:
    branch on it); `detail` is a sentence for a person; `errors` lists invalid fields."""

    type: str
    title: str
    status: int
    detail: str
    instance: NotRequired[str]
    errors: NotRequired[list[FieldProblem]]
