"""The JSON Schema of a site config, for editors and for admins' own tooling.

`site-configs/schema.json` is this function's output; a test keeps it current.
"""

from __future__ import annotations

import json
from typing import Any

from gateway.siteconfig.model import SiteConfig

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def site_config_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) that site config files must satisfy."""
    schema = SiteConfig.model_json_schema(mode="validation")
    schema.pop("title", None)
    defs = schema.pop("$defs", {})
    # Top-level keys first and the definitions last: easier to read in an editor.
    return {"$schema": JSON_SCHEMA_DIALECT, "title": "gridgate site configuration", **schema,
            "$defs": defs}


def render_json_schema() -> str:
    """The schema as the text of site-configs/schema.json."""
    return json.dumps(site_config_json_schema(), indent=2, ensure_ascii=False) + "\n"
