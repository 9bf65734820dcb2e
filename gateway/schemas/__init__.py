"""The REST API's JSON documents: one set, for the server and for the client.

The API declares these as its response models (they are its OpenAPI schemas) and
serializes through them; the client validates every response with the same types and
hands callers the documents (typed dicts, timestamps as `datetime`). A field added here
is sent by the server and kept by the client, with nothing else to edit.

They are TypedDicts rather than pydantic models so that the client's callers keep plain
dicts (`job["state"]`, the documents `--json` prints). This package imports neither the
server (`gateway.api`, services, db) nor the client, so both may import it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import TypeAdapter


@cache
def adapter(document: Any) -> TypeAdapter[Any]:
    """The (cached) pydantic adapter for one document type; built on first use, so
    importing the schemas costs the CLI nothing."""
    return TypeAdapter(document)


def to_json(document: Any, value: Any) -> bytes:
    """`value` serialized as the API sends `document`s (keys in the order given)."""
    return adapter(document).dump_json(value)


def parse(document: Any, value: Any) -> Any:
    """`value` (decoded JSON) validated as a `document`: timestamps become datetimes."""
    return adapter(document).validate_python(value)
