"""Small workflow specs for the tests: plain data, as a parsed YAML or JSON document."""

from __future__ import annotations

from typing import Any


def job(name: str = "j", **fields: Any) -> dict[str, Any]:
    """A job spec as the gateway takes it (the workflow only reads a few fields)."""
    return {"name": name, "executable": "/bin/true", **fields}


def workflow(steps: dict[str, dict[str, Any]], **fields: Any) -> dict[str, Any]:
    """A workflow named `w` with `steps`; a step without a job gets one."""
    return {"name": "w", **fields,
            "steps": {name: {"job": job(name), **step} for name, step in steps.items()}}
