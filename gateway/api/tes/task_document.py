"""A gridgate job as a TES 1.1 task document, in the view asked for (pure).

MINIMAL is the id and state; BASIC adds what the task asked for (name, description,
executors, inputs without their content, outputs, resources, volumes, tags: as its client
sent them, kept beside the job, or for a task created before they were kept as its job
spec says), when it was created and its logs: one per attempt of the job (a site's
run; hedge losers, never the job's result, are left out), with the attempt's times, its
exit code and where it ran (`metadata`); FULL adds `system_logs`, the gateway's reason
for the attempt's end, and the tails of the newest attempt's stdout and stderr, which
`GET /tasks/{id}` reads from the site (`Tails`; a listing does not: a site round trip
per task; `GET /api/v1/jobs/{id}/logs/{stream}` reads the whole of them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from gateway.api.tes.resources import GB_IN_MIB
from gateway.api.tes.states import tes_state
from gateway.api.tes.task_files import TES_ROOT
from gateway.api.tes.task_spec import tes_image
from gateway.domain.deliveries import Delivery
from gateway.domain.jobspec import SUBMITTED
from gateway.schemas.jobs import AttemptOut, JobOut
from rules import output_globs

# What a task asked for, read back from the task as sent when it was kept.
_ASKED = ("name", "description", "executors", "inputs", "outputs", "resources", "volumes",
          "tags")


class View(StrEnum):
    """How much of a task to return (TES's `view`)."""

    MINIMAL = "MINIMAL"
    BASIC = "BASIC"
    FULL = "FULL"


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _dropped_none(document: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in document.items() if value is not None}


@dataclass(frozen=True)
class Tails:
    """The ends of the newest attempt's stdout and stderr as read now, or why they could
    not be read."""

    stdout: str = ""
    stderr: str = ""
    unreadable: str | None = None


def task_document(job: JobOut, view: View, tails: Tails | None = None,
                  outputs: Sequence[tuple[str, int]] = (),
                  sent: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`job` as a TES task in `view` (FULL: with `tails` when they were read); `outputs`:
    the job's collected outputs (path, size), listed with where they were delivered;
    `sent`: the task as its client sent it, when kept (what it asked for reads back as
    given, inline inputs' content in FULL only)."""
    state = tes_state(job["state"], cancel_requested=job["cancel_requested"],
                      held=job["held"], reason=job["reason"], exit_code=job["exit_code"])
    document: dict[str, Any] = {"id": job["id"], "state": state}
    if view is View.MINIMAL:
        return document
    spec = job["spec"]
    container = spec.get("container") or {}
    image = tes_image(container.get("image", ""))
    executors = [_dropped_none({
        "image": image,
        "command": [spec["executable"], *spec.get("args", ())] if spec.get("executable")
        else ["/bin/sh", "-c", spec.get("script") or ""],
        "env": container.get("environment") or None,
    })] + [_dropped_none({"image": tes_image(step["image"]) if step.get("image") else image,
                          "command": [step["executable"], *step["args"]],
                          "env": step.get("environment") or None})
           for step in container.get("then") or ()]
    document |= _dropped_none({
        "name": job["name"],
        "executors": executors,
        "resources": _resources(spec),
        "tags": job["labels"] or None,
        "creation_time": _time(job["created_at"]),
        "logs": [_log(attempt, full=view is View.FULL) for attempt in job["attempts"]
                 if attempt["state"] != "REVOKED"],
    })
    if sent is not None:
        document |= _as_sent(sent, full=view is View.FULL)
    if outputs and job["state"] == "COMPLETED" and document.get("logs"):
        document["logs"][-1]["outputs"] = delivered(spec, outputs)
    if view is View.FULL and job["state"] == "FAILED" and job["reason"] and document.get("logs"):
        # The job's own reason (a stage-out that failed after a good run, say).
        said = document["logs"][-1].setdefault("system_logs", [])
        if job["reason"] not in said:
            said.append(job["reason"])
    if view is View.FULL and tails is not None and document.get("logs"):
        newest = document["logs"][-1]
        if tails.unreadable is not None:
            newest.setdefault("system_logs", []).append(tails.unreadable)
        else:
            # The executors share the job's streams: their ends go with the last one.
            if newest["logs"]:
                newest["logs"][-1] |= {"stdout": tails.stdout, "stderr": tails.stderr}
    return document


def _as_sent(sent: Mapping[str, Any], full: bool) -> dict[str, Any]:
    """What the task asked for, as its client sent it (BASIC leaves inputs' content out,
    as TES says)."""
    asked = {key: sent[key] for key in _ASKED if sent.get(key)}
    if not full and asked.get("inputs"):
        asked["inputs"] = [{k: v for k, v in item.items() if k != "content"}
                           for item in asked["inputs"]]
    return asked


def delivered(spec: dict[str, Any], outputs: Sequence[tuple[str, int]]
              ) -> list[dict[str, Any]]:
    """TES's output file logs: each collected output a `deliver` entry sent on, with its
    URL, its path in the container and its size (a directory's files one by one)."""
    found = []
    for entry in spec.get("deliver") or ():
        delivery = Delivery.model_validate(entry, context=SUBMITTED)
        for path, size in outputs:
            if output_globs.matches(delivery.glob, path):
                found.append({"url": delivery.url_of(path),
                              "path": "/" + path.removeprefix(TES_ROOT + "/"),
                              "size_bytes": str(size)})
    return found


def _resources(spec: dict[str, Any]) -> dict[str, Any]:
    asked = spec.get("resources") or {}
    memory, scratch = asked.get("memory_mb"), asked.get("scratch_mb")
    site = spec.get("site", "auto")
    zones = (spec.get("routing") or {}).get("zones") or ([] if site == "auto" else [site])
    return _dropped_none({
        "cpu_cores": asked.get("threads_per_rank", 1) * asked.get("ranks", 1),
        "ram_gb": None if memory is None else round(memory / GB_IN_MIB, 3),
        "disk_gb": None if scratch is None else round(scratch / GB_IN_MIB, 3),
        "zones": zones or None,
    })


def _executor_logs(attempt: AttemptOut) -> list[dict[str, Any]]:
    """One per executor that ran, with its exit code (ExecutorLog requires one: none
    before the run ends); the first starts when the run did, the last ends with it."""
    codes = attempt["step_exit_codes"]
    if codes is None:
        codes = [] if attempt["exit_code"] is None else [attempt["exit_code"]]
    logs: list[dict[str, Any]] = [{"exit_code": code} for code in codes]
    if logs:
        logs[0] |= _dropped_none({"start_time": _time(attempt["started_at"])})
        logs[-1] |= _dropped_none({"end_time": _time(attempt["ended_at"])})
    return logs


def _log(attempt: AttemptOut, full: bool) -> dict[str, Any]:
    log = _dropped_none({
        "start_time": _time(attempt["started_at"]),
        "end_time": _time(attempt["ended_at"]),
        "logs": _executor_logs(attempt),
        "metadata": _dropped_none({"site": attempt["site"], "attempt": str(attempt["number"]),
                                   "native_id": attempt["native_id"]}),
        "outputs": [],
    })
    if full and attempt["reason"]:
        log["system_logs"] = [attempt["reason"]]
    return log
