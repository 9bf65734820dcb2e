"""The JSON Schema of a workflow spec, from the model itself (so the two cannot drift).

The job of a step is any object here; the gateway passes its own JobSpec schema to have it
checked in the schema too (its `$defs` join the workflow's).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from workflows.model import WorkflowSpec

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def workflow_schema(job_schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON Schema (2020-12) of a workflow spec; `job_schema`: the schema of a step's
    `job` (the gateway's JobSpec), else any object."""
    schema = WorkflowSpec.model_json_schema(by_alias=True)
    schema = {"$schema": DIALECT, **schema}
    if job_schema is None:
        return schema
    job = copy.deepcopy(dict(job_schema))
    job_defs = job.pop("$defs", {})
    defs: dict[str, Any] = schema["$defs"]
    clash = sorted(set(job_defs) & set(defs))
    if clash or "JobSpec" in defs:
        raise ValueError(f"the job schema's definitions {clash} are the workflow's names too")
    job.pop("$schema", None)
    defs.update(job_defs)
    defs["JobSpec"] = job
    step_job = defs["Step"]["properties"]["job"]
    defs["Step"]["properties"]["job"] = {"$ref": "#/$defs/JobSpec",
                                         "description": step_job.get("description", "")}
    return schema
