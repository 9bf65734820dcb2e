"""Build a job request from a spec file (YAML or JSON) and command-line flags.

Flags override the file. The gateway validates the result; the CLI only checks
what it must parse itself (KEY=VALUE pairs, the --mpi value) and the inputs that name
files on this machine, which it uploads (`gateway.cli.files.inputs`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gateway.client.errors import ClientError

MPI_LAUNCHERS = ("none", "mpirun", "srun")
# `upload:ID`, `site://...`, `https://...`: a source with a scheme is the gateway's to
# fetch. Anything else is a file on this machine (write `./a:b` for a name with a colon).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass
class SpecFlags:
    """Everything `gridgate submit` accepts besides the spec file."""

    name: str | None = None
    executable: str | None = None
    args: Sequence[str] | None = None
    ranks: int | None = None
    nodes: int | None = None
    walltime: str | None = None
    mpi: str | None = None
    site: str | None = None
    project: str | None = None
    env: Sequence[str] = field(default_factory=list)
    labels: Sequence[str] = field(default_factory=list)
    inputs: Sequence[Path] = field(default_factory=list)
    mail_type: str | None = None
    mail_user: str | None = None


@dataclass(frozen=True)
class LocalInput:
    """An input of the spec that names a file on this machine: `inputs[index]`."""

    index: int
    path: Path
    dest: str


def load_spec_file(path: Path) -> dict[str, Any]:
    """A job spec from a .json file, or YAML (any other suffix)."""
    import yaml  # here, not at the top: only commands that read a spec pay for it

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ClientError(f"Cannot read the job spec {path}: {exc.strerror or exc}.") from exc
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ClientError(f"The job spec {path} is not valid "
                          f"{'JSON' if path.suffix.lower() == '.json' else 'YAML'}: {exc}") \
            from exc
    if not isinstance(data, dict):
        raise ClientError(f"The job spec {path} must be a mapping of fields "
                          "(name, executable, args, resources, ...).")
    return data


def pairs(items: Sequence[str], what: str) -> dict[str, str]:
    """`["K=V", ...]` as a dict; the value may itself contain '='."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ClientError(f"{what} {item!r} must look like KEY=VALUE.")
        out[key] = value
    return out


def parse_mpi(value: str) -> dict[str, str]:
    """`LAUNCHER[:FLAVOR]` (e.g. `mpirun:mpich`), or a bare flavor meaning mpirun."""
    launcher, _, flavor = value.partition(":")
    if launcher not in MPI_LAUNCHERS:
        if flavor:
            raise ClientError(f"--mpi {value!r}: the launcher must be one of "
                              f"{', '.join(MPI_LAUNCHERS)}.")
        launcher, flavor = "mpirun", launcher
    mpi = {"launcher": launcher}
    if flavor:
        mpi["flavor"] = flavor
    return mpi


def parse_mail_type(value: str) -> list[str]:
    """`--mail-type BEGIN,END` (any case, as sbatch) as the spec's `notify.mail` list;
    `none` asks for none. The gateway judges the words."""
    words = [w.strip().lower() for w in value.split(",") if w.strip()]
    return [] if words == ["none"] else words


def _walltime(value: str) -> str | int:
    return int(value) if value.strip().isdigit() else value


def build_spec(base: dict[str, Any] | None, flags: SpecFlags) -> dict[str, Any]:
    """The request body: `base` (from a file, possibly empty) with `flags` applied."""
    spec: dict[str, Any] = dict(base or {})
    if flags.executable is not None:
        spec["executable"] = flags.executable
        spec.pop("script", None)
    if flags.args is not None:
        spec["args"] = list(flags.args)
    if flags.name is not None:
        spec["name"] = flags.name
    elif "name" not in spec and spec.get("executable"):
        spec["name"] = Path(str(spec["executable"])).name
    for key, value in (("site", flags.site), ("project", flags.project)):
        if value is not None:
            spec[key] = value
    resources = dict(spec.get("resources") or {})
    if flags.ranks is not None:
        resources["ranks"] = flags.ranks
    if flags.nodes is not None:
        resources["nodes"] = flags.nodes
    if flags.walltime is not None:
        resources["walltime"] = _walltime(flags.walltime)
    if resources:
        spec["resources"] = resources
    if flags.mpi is not None:
        spec["mpi"] = parse_mpi(flags.mpi)
    if flags.env:
        spec["environment"] = {**(spec.get("environment") or {}), **pairs(flags.env, "--env")}
    if flags.labels:
        spec["labels"] = {**(spec.get("labels") or {}), **pairs(flags.labels, "--label")}
    if flags.mail_type is not None or flags.mail_user is not None:
        notify = dict(spec.get("notify") or {})
        if flags.mail_type is not None:
            notify["mail"] = parse_mail_type(flags.mail_type)
        if flags.mail_user is not None:
            notify["to"] = flags.mail_user
        spec["notify"] = notify
    if flags.inputs:
        # Relative to where the command runs, as a shell would read them.
        spec["inputs"] = [*(spec.get("inputs") or []),
                          *({"source": str(p.absolute()), "dest": p.name} for p in flags.inputs)]
    return spec


def local_inputs(spec: Mapping[str, Any], base_dir: Path) -> list[LocalInput]:
    """The inputs whose `source` is a path on this machine (no `scheme:`), relative to
    `base_dir` (the spec file's directory); `dest` defaults to the file's name. Entries
    the gateway must judge (not a mapping, a source with a scheme) are left to it."""
    found: list[LocalInput] = []
    inputs = spec.get("inputs")
    if not isinstance(inputs, list):
        return found
    for i, entry in enumerate(inputs):
        source = entry.get("source") if isinstance(entry, dict) else None
        if not isinstance(source, str) or not source or _SCHEME.match(source):
            continue
        path = base_dir / Path(source).expanduser()
        if not path.is_file():
            raise ClientError(
                f"inputs[{i}].source {source!r}: there is no file {path}. A source without "
                "upload:, site:// or https:// is a file on this machine, relative to the job "
                "spec's directory; gridgate submit uploads it.")
        dest = entry.get("dest")
        found.append(LocalInput(i, path, dest if isinstance(dest, str) and dest
                                else path.name))
    return found


def with_uploads(spec: Mapping[str, Any], uploaded: Mapping[int, tuple[str, str]]
                 ) -> dict[str, Any]:
    """`spec` with `inputs[i]` sent as `upload:ID` to `dest` for each i: (ID, dest)."""
    inputs = list(spec.get("inputs") or [])
    for i, (upload_id, dest) in uploaded.items():
        inputs[i] = {**inputs[i], "source": f"upload:{upload_id}", "dest": dest}
    return {**spec, "inputs": inputs}


def local_image(spec: Mapping[str, Any], base_dir: Path) -> Path | None:
    """The file on this machine that `container.image` names (no `scheme:`), relative to
    `base_dir`; None when it names an image elsewhere (upload:, https://, docker://...)."""
    container = spec.get("container")
    image = container.get("image") if isinstance(container, dict) else None
    if not isinstance(image, str) or not image or _SCHEME.match(image):
        return None
    path = base_dir / Path(image).expanduser()
    if not path.is_file():
        raise ClientError(
            f"container.image {image!r}: there is no file {path}. An image without upload:, "
            "https:// or a registry scheme (docker://, oras://, library://) is a SIF file on "
            "this machine, relative to the job spec's directory; gridgate uploads it.")
    return path


def with_image(spec: Mapping[str, Any], upload_id: str) -> dict[str, Any]:
    """`spec` with its container image sent as `upload:ID`."""
    return {**spec, "container": {**spec["container"], "image": f"upload:{upload_id}"}}
