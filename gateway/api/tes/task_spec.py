"""A TES task as a gridgate job spec (pure): what a CreateTask body asks for, in the
fields `POST /api/v1/jobs` takes, so that a task is a job like any other (owner,
project, routing, allocation, audit, events, the CLI's view).

A task's executors run in order in one job: the first is the job's program, the others
its container's `then` steps, each with its own image (a bare `ubuntu:22.04`, as TES
clients write it, is a Docker Hub reference), command, environment inside the container
(the same name rules as every job), working directory, standard streams' files and
`ignore_error`. Its inputs are placed where it said and its outputs sent where it said,
and its volumes made (`task_files.py`).

A task that names one of its owner's file:// directories (in an executor's command,
environment, working directory or stream files, or in an inline input, as Snakemake's
jobs name the `fs` storage prefix) has that directory bound at its own path: such a task
runs only at sites that mount the directory where the gateway's host has it (their
`containers.bind_prefixes`), since routing screens every bind's source.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gateway.api.tes.resources import spec_fields
from gateway.api.tes.task_files import Content, Lister, task_files, working_directory
from gateway.api.tes.task_model import TesExecutor, TesTask

# A name for a task that has none (TES makes it optional, a job spec requires one).
DEFAULT_NAME = "tes-task"
# What an executor says besides its image and command, in the container's own words.
_STEP_KEYS = ("environment", "workdir", "stdin", "stdout", "stderr", "ignore_error")
_SCHEMES = ("docker://", "oras://", "library://", "https://", "upload:")


def image_ref(image: str) -> str:
    """A TES executor's image as a gridgate image reference: registry references
    without a scheme are Docker's (`ubuntu:22.04` is `docker://ubuntu:22.04`)."""
    return image if image.startswith(_SCHEMES) else f"docker://{image}"


def tes_image(ref: str) -> str:
    """A gridgate image reference as TES writes it: a Docker reference without the
    scheme (what clients send, and compare with what they read back)."""
    return ref.removeprefix("docker://")


def job_spec(task: TesTask, keep: Callable[[Content], str], listing: Lister,
             shared: Sequence[str] = ()) -> dict[str, Any]:
    """The job spec (as `POST /api/v1/jobs` takes it) of the TES task `task`; `Invalid`
    naming the field for what gridgate does not run yet. `keep` stores an input the
    gateway keeps (inline, or file://) and returns the id of the upload that holds it;
    `listing` lists a file:// or site:// directory; `shared` are the owner's file:// directories."""
    first, *rest = task.executors
    steps = [_step(executor, index) for index, executor in enumerate(task.executors)]
    for step, later in zip(steps[1:], rest, strict=True):
        if image_ref(later.image) != image_ref(first.image):
            step["image"] = image_ref(later.image)
    files = task_files(task.inputs, task.outputs, listing,
                       tuple(step["workdir"] for step in steps if "workdir" in step),
                       tuple(task.volumes))
    main = steps[0]
    container: dict[str, Any] = {"image": image_ref(first.image),
                                 **{key: main[key] for key in _STEP_KEYS if key in main}}
    binds = files.binds + [{"src": path, "dst": path} for path in shared
                           if any(_names(path, text) for text in _texts(task))]
    if binds:
        container["binds"] = binds
    if rest:
        container["then"] = steps[1:]
    spec: dict[str, Any] = {
        "name": task.name or DEFAULT_NAME,
        "executable": main["executable"],
        "args": main["args"],
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


def _names(path: str, text: str) -> bool:
    """Whether `text` names `path` or a path below it (`/a/b` is not named by `/a/bc`)."""
    return re.search(re.escape(path) + r"(?![\w.-])", text) is not None


def _texts(task: TesTask) -> Iterator[str]:
    """The words of a task that may name a path the executors use."""
    for executor in task.executors:
        yield from executor.command
        yield from executor.env.values()
        yield from (p for p in (executor.workdir, executor.stdin, executor.stdout,
                                executor.stderr) if p is not None)
    yield from (item.content for item in task.inputs if item.content is not None)


def _step(executor: TesExecutor, index: int) -> dict[str, Any]:
    """An executor as a container step (`then`): its command and its own settings."""
    step: dict[str, Any] = {"executable": executor.command[0], "args": executor.command[1:]}
    if executor.env:
        step["environment"] = dict(executor.env)
    for key in ("workdir", "stdin", "stdout", "stderr"):
        path = getattr(executor, key)
        if path is not None:
            step[key] = working_directory(path, f"executors.{index}.{key}")
    if executor.ignore_error:
        step["ignore_error"] = True
    return step
