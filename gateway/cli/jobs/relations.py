"""`gridgate submit --dependency` and `--array`, as Slurm's sbatch takes them. The ids in
a dependency may be unique starts of ids, ARRAY_INDEX tasks or job arrays (all their
tasks), resolved among your own jobs and arrays before the syntax is checked whole by
the workflows package (the gateway checks it again, and that each job is yours)."""

from __future__ import annotations

from typing import Any

from gateway.cli import errors
from gateway.client.api import GatewayClient
from gateway.client.job_ids import resolve_any
from workflows.arrays import parse_array
from workflows.dependencies import DependencyType, parse_dependency_option
from workflows.errors import WorkflowError

_TYPES = frozenset(t.value for t in DependencyType)


def depends_on(client: GatewayClient, text: str) -> list[dict[str, str]]:
    """The spec's `depends_on` for `--dependency TYPE:ID[:ID...][,TYPE:ID...]`."""
    items = []
    for item in text.split(","):
        kind, colon, rest = item.partition(":")
        if colon and kind in _TYPES:
            # Only well-formed ids are looked up; the parser words the rest's errors.
            rest = ":".join(resolve_any(client, word) if word and "+" not in word else word
                            for word in rest.split(":"))
        items.append(f"{kind}{colon}{rest}")
    try:
        found = parse_dependency_option(",".join(items))
    except WorkflowError as exc:
        raise errors.fail(f"error: --dependency: {exc.message}", errors.USAGE) from exc
    return [{"job": dep.job, "when": dep.when.value} for dep in found]


def task_count(spec: dict[str, Any]) -> int | None:
    """How many tasks the spec's `array` has (None when it has none, or the gateway is to
    say what is wrong with it)."""
    text = spec.get("array")
    if not isinstance(text, str):
        return None
    try:
        return parse_array(text).count
    except WorkflowError:
        return None
