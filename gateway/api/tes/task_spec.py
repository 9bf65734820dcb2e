"""A TES task as a gridgate job spec (pure): what a CreateTask body asks for, in the
fields `POST /api/v1/jobs` takes, so that a task is a job like any other (owner,
project, routing, allocation, audit, events, the CLI's view).

So far a task runs one executor: its image (a bare `ubuntu:22.04`, as TES clients write
it, is a Docker Hub reference), its command, its environment inside the container (the
same name rules as every job), its working directory and standard streams' files, its
inputs where it said and its outputs sent where it said (`task_files.py`). What is not
translated yet is refused by name, never dropped: several executors, an executor's
`ignore_error` and `volumes` (issue 30).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.api.tes.resources import spec_fields
from gateway.api.tes.task_files import Content, Lister, task_files, working_directory
from gateway.api.tes.task_model import TesTask
from gateway.domain.errors import Invalid

# A name for a task that has none (TES makes it optional, a job spec requires one).
DEFAULT_NAME = "tes-task"
# Executor fields not translated yet.
_NOT_YET = ("ignore_error",)
_SCHEMES = ("docker://", "oras://", "library://", "https://", "upload:")


def image_ref(image: str) -> str:
    """A TES executor's image as a gridgate image reference: registry references
    without a scheme are Docker's (`ubuntu:22.04` is `docker://ubuntu:22.04`)."""
    return image if image.startswith(_SCHEMES) else f"docker://{image}"


def tes_image(ref: str) -> str:
    """A gridgate image reference as TES writes it: a Docker reference without the
    scheme (what clients send, and compare with what they read back)."""
    return ref.removeprefix("docker://")


def job_spec(task: TesTask, keep: Callable[[Content], str], listing: Lister) -> dict[str, Any]:
    """The job spec (as `POST /api/v1/jobs` takes it) of the TES task `task`; `Invalid`
    naming the field for what gridgate does not run yet. `keep` stores an input the
    gateway keeps (inline, or file://) and returns the id of the upload that holds it;
    `listing` lists a file:// directory."""
    if len(task.executors) != 1:
        raise Invalid(f"a task runs exactly one executor in gridgate so far "
                      f"(got {len(task.executors)})", field="executors")
    executor = task.executors[0]
    for key in _NOT_YET:
        if getattr(executor, key) not in (None, False):
            raise Invalid(f"executors[0].{key} is not supported yet", field=f"executors.0.{key}")
    if task.volumes:
        raise Invalid("volumes are not supported yet", field="volumes")
    workdir = (None if executor.workdir is None
               else working_directory(executor.workdir, "executors.0.workdir"))
    files = task_files(task.inputs, task.outputs, listing,
                       () if workdir is None else (workdir,))
    container: dict[str, Any] = {"image": image_ref(executor.image)}
    if executor.env:
        container["environment"] = dict(executor.env)
    if files.binds:
        container["binds"] = files.binds
    if workdir is not None:
        container["workdir"] = workdir
    for stream in ("stdin", "stdout", "stderr"):
        path = getattr(executor, stream)
        if path is not None:
            container[stream] = working_directory(path, f"executors.0.{stream}")
    spec: dict[str, Any] = {
        "name": task.name or DEFAULT_NAME,
        "executable": executor.command[0],
        "args": executor.command[1:],
        "container": container,
        **spec_fields(task.resources),
    }
    inputs = files.inputs + [{"source": f"upload:{keep(content)}", "dest": content.dest}
                             for content in files.contents]
    if inputs:
        spec["inputs"] = inputs
    if files.deliver:
        spec["deliver"] = files.deliver
    if task.tags:
        spec["labels"] = dict(task.tags)
    return spec
