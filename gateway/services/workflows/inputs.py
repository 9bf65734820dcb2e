"""Data edges of a workflow, resolved when the consumer is opened (its producers have
completed): each `from: STEP:outputs/PATH` becomes ordinary job inputs of the consumer.

- An output fetched into the gateway store (`outputs_mode: fetch`, the default) becomes a
  complete upload of the owner over the same blob (no copy: uploads are content
  addressed), staged like any upload, its sha256 checked at the consumer's site.
- An output kept at its site (`outputs_mode: keep`) becomes `site://SITE/PATH`: the
  staging layer copies it site to site, as the owner, checked against its sha256.

Routing counts the time to move each input to each candidate site: a `site://` input's
size is the kept output's (gateway.services.routing.forecasting), so a step with large inputs leans
towards where they are. Later: a consumer at the producer's own site could use the file in
place instead of a copy.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from gateway.db.models import JobOutput, Upload
from gateway.domain.staging import IN_STORE
from gateway.repositories import uploads
from gateway.repositories import workflows as repo
from gateway.services.data.uploads import COMPLETE
from workflows.paths import is_pattern, matches
from workflows.plan import Instance, ResolvedInput


class MissingOutput(Exception):
    """A producer completed without the output an input names; the message says which."""


def resolve(session: Session, instance: Instance, job_of: Mapping[str, str | None],
            labels: Mapping[str, str], owner_id: str, now: datetime) -> list[dict[str, str]]:
    """The job inputs (`{source, dest}`) the instance's data edges stand for, or
    MissingOutput."""
    producers = sorted({item.producer for item in instance.inputs})
    outputs = repo.outputs(session, [job_of[p] or "" for p in producers])
    found: list[dict[str, str]] = []
    for item in instance.inputs:
        chosen = _chosen(item, outputs.get(job_of[item.producer] or "", []))
        if not chosen:
            raise MissingOutput(f"{labels[item.producer]} completed without an output "
                                f"{item.path!r} (check its job's `outputs`)")
        for output in chosen:
            dest = f"{item.dest}/{output.path}" if item.into_directory else item.dest
            found.append({"source": _source(session, output, owner_id, now), "dest": dest})
    return found


def _chosen(item: ResolvedInput, outputs: Sequence[JobOutput]) -> list[JobOutput]:
    if is_pattern(item.path):
        return [o for o in outputs if matches(item.path, o.path)]
    return [o for o in outputs if o.path == item.path][:1]


def _source(session: Session, output: JobOutput, owner_id: str, now: datetime) -> str:
    if output.location != IN_STORE:
        return f"site://{output.site_name}{output.site_path}"
    upload = Upload(id=str(uuid.uuid4()), owner_id=owner_id,
                    name=posixpath.basename(output.path)[:255], size=output.size,
                    expected_sha256=output.sha256, bytes_received=output.size, state=COMPLETE,
                    sha256=output.sha256, created_at=now, expires_at=now, completed_at=now)
    uploads.add(session, upload)
    return f"upload:{upload.id}"


def with_inputs(spec: Mapping[str, Any], inputs: Sequence[Mapping[str, str]]
                ) -> dict[str, Any]:
    """The job spec with `inputs` added after its own."""
    return {**spec, "inputs": [*(spec.get("inputs") or []), *inputs]}
