"""The published TES 1.1 OpenAPI document (../shared/specs/, beside the checkout: the
project validates against it and keeps no copy)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
NAME = "ga4gh-tes-1.1.0.openapi.yaml"
# Beside the checkout, or one level up in a worktree.
CANDIDATES = [base / "shared" / "specs" / NAME for base in (ROOT.parent, ROOT.parent.parent)]


@cache
def tes_spec() -> dict[str, Any]:
    """The specification as data. Where the project's shared folder sits beside the
    checkout, a missing specification fails; a checkout without that folder (a bare
    clone elsewhere) skips, saying where it looked."""
    found = next((path for path in CANDIDATES if path.is_file()), None)
    if found is None:
        where = " or ".join(str(path) for path in CANDIDATES)
        if any(path.parent.parent.is_dir() for path in CANDIDATES):
            pytest.fail(f"the TES specification is not at {where}")
        pytest.skip(f"no shared folder beside this checkout: {where}")
    document: dict[str, Any] = yaml.safe_load(found.read_text())
    return document


def schema(name: str) -> dict[str, Any]:
    """`components.schemas[name]`."""
    found: dict[str, Any] = tes_spec()["components"]["schemas"][name]
    return found


# tesServiceInfo extends GA4GH service-info 1.0.0's Service by reference to a URL this
# machine cannot reach: its required fields, as that specification defines them (id,
# name, type {group, artifact, version} (its ServiceType), organization {name, url},
# version), stand in.
SERVICE_INFO = ("https://raw.githubusercontent.com/ga4gh-discovery/ga4gh-service-info/"
                "v1.0.0/service-info.yaml")
_TEXT = {"type": "string", "minLength": 1}
SERVICE_INFO_DOCUMENT = {"components": {"schemas": {"Service": {
    "type": "object",
    "required": ["id", "name", "type", "organization", "version"],
    "properties": {
        "id": _TEXT, "name": _TEXT, "version": _TEXT, "description": _TEXT,
        "documentationUrl": _TEXT, "contactUrl": _TEXT,
        "type": {"$ref": "#/components/schemas/ServiceType"},
        "organization": {"type": "object", "required": ["name", "url"],
                         "properties": {"name": _TEXT, "url": _TEXT}},
    }},
    "ServiceType": {"type": "object", "required": ["group", "artifact", "version"],
                    "properties": {"group": _TEXT, "artifact": _TEXT, "version": _TEXT}},
}}}


def validate(document: Any, name: str, view: str = "FULL") -> None:
    """Raise unless `document` is a valid `components.schemas[name]` (the specification's
    own `$ref`s resolved within it; OpenAPI's annotations, e.g. `readOnly`, ignored). A
    task in the MINIMAL view carries "ONLY the fields tesTask.Id, tesTask.State" (the
    specification's `view` parameter), so its `required` list does not apply there."""
    import jsonschema
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT4

    registry: Registry[Any] = Registry().with_resources([
        ("urn:tes", Resource.from_contents(tes_spec(), default_specification=DRAFT4)),
        (SERVICE_INFO, Resource.from_contents(SERVICE_INFO_DOCUMENT,
                                              default_specification=DRAFT4))])
    def check(value: Any, schema_name: str) -> None:
        jsonschema.Draft4Validator(
            {"$ref": f"urn:tes#/components/schemas/{schema_name}"}, registry=registry,
            format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(value)

    if view == "MINIMAL":
        if set(document) != {"id", "state"} or not isinstance(document["id"], str):
            raise jsonschema.ValidationError(f"a MINIMAL task has only id and state: {document}")
        check(document["state"], "tesState")
        return
    check(document, name)
