"""The definition `gridgate image build` reads: a base root file system, files to add, and
the environment, as YAML:

    from: rootfs/              # a directory, or an existing .sif (its primary partition)
    files:                     # host path (relative to this file) -> absolute path in the image
      build/hello: /opt/app/bin/hello
    environment:
      OMP_NUM_THREADS: "1"

and how the environment is written into the image: for Apptainer as
/.singularity.d/env/90-environment.sh (what a definition's %environment becomes), for
Charliecloud as /ch/environment (what `ch-run --set-env` reads), and as the SIF's Env.Vars
object (JSON). The caller parses the YAML; nothing here touches files.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from containers.errors import DefinitionError

KEYS = ("from", "files", "environment")
APPTAINER_ENV = "/.singularity.d/env/90-environment.sh"
CHARLIECLOUD_ENV = "/ch/environment"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ENV_HEADER = "#!/bin/sh\n# Custom environment shell code should follow\n\n"
# Mount points Apptainer and ch-run bind over. A SquashFS image is read-only, so they must
# exist in it already. /tmp and /var/tmp sticky and world-writable, as on any system
# (paths inside the image, not this host's temporary directories).
SKELETON_DIRS = {"/dev": 0o755, "/proc": 0o555, "/sys": 0o555, "/tmp": 0o1777,  # noqa: S108
                 "/var/tmp": 0o1777, "/home": 0o755, "/mnt": 0o755, "/etc": 0o755,  # noqa: S108
                 "/.singularity.d": 0o755, "/.singularity.d/env": 0o755,
                 "/.singularity.d/actions": 0o755, "/.singularity.d/libs": 0o755,
                 # ch-run binds the job directory to /mnt/0 and cannot make a mount point
                 # in a read-only SquashFS image; ch-image images have /mnt/0 ... /mnt/9.
                 **{f"/mnt/{n}": 0o755 for n in range(10)}}
SKELETON_FILES = ("/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf")


@dataclass(frozen=True)
class ImageDefinition:
    """A parsed definition; paths as written (the caller resolves `base` and sources)."""

    base: str
    files: tuple[tuple[str, PurePosixPath], ...] = ()
    environment: tuple[tuple[str, str], ...] = field(default=())


def image_path(text: str, what: str = "destination") -> PurePosixPath:
    """An absolute, normalized path inside the image; never `/` itself, never above it."""
    if not text.startswith("/"):
        raise DefinitionError(f"The {what} {text!r} must be an absolute path inside the "
                              f"image (start with '/').")
    if "\x00" in text or ".." in PurePosixPath(text).parts:
        raise DefinitionError(f"The {what} {text!r} may not contain '..' or NUL.")
    path = PurePosixPath(posixpath.normpath(text))
    if path == PurePosixPath("/"):
        raise DefinitionError(f"The {what} may not be the image's root '/'.")
    return path


def _environment(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        raise DefinitionError("'environment' must map variable names to values.")
    pairs = []
    for name, raw in value.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise DefinitionError(f"Environment name {name!r} is not a shell variable name "
                                  f"(letters, digits, '_', not starting with a digit).")
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            raise DefinitionError(f"Environment {name}: the value must be text or a number "
                                  f"(quote it: {name}: \"...\").")
        text = str(raw)
        if "\n" in text or "\x00" in text:
            # /ch/environment holds one NAME=VALUE per line.
            raise DefinitionError(f"Environment {name}: the value may not contain a newline.")
        pairs.append((name, text))
    return tuple(pairs)


def _files(value: object) -> tuple[tuple[str, PurePosixPath], ...]:
    if not isinstance(value, Mapping):
        raise DefinitionError("'files' must map host paths to absolute paths in the image.")
    pairs = []
    for source, dest in value.items():
        if not isinstance(source, str) or not source or not isinstance(dest, str):
            raise DefinitionError(f"files: {source!r}: {dest!r} must be two paths.")
        pairs.append((source, image_path(dest, f"destination of {source!r}")))
    return tuple(pairs)


def parse_definition(data: object) -> ImageDefinition:
    """A definition from its parsed YAML."""
    if not isinstance(data, Mapping):
        raise DefinitionError("A definition is a YAML mapping with 'from' (and optionally "
                              "'files', 'environment').")
    unknown = sorted(str(k) for k in data if k not in KEYS)
    if unknown:
        raise DefinitionError(f"Unknown key(s) {', '.join(unknown)}: a definition has "
                              f"{', '.join(KEYS)}.")
    base = data.get("from")
    if not isinstance(base, str) or not base.strip():
        raise DefinitionError("'from' must name the base: a directory holding a root file "
                              "system, or an existing .sif image.")
    return ImageDefinition(base=base, files=_files(data.get("files") or {}),
                           environment=_environment(data.get("environment") or {}))


def environment_script(environment: Mapping[str, str], existing: str | None = None) -> str:
    """/.singularity.d/env/90-environment.sh: the base image's lines, then one `export` per
    variable (later lines win when the shell sources it)."""
    text = existing if existing is not None else _ENV_HEADER
    if text and not text.endswith("\n"):
        text += "\n"
    return text + "".join(f"export {name}={shlex.quote(value)}\n"
                          for name, value in environment.items())


def charliecloud_environment(environment: Mapping[str, str],
                             existing: str | None = None) -> str:
    """/ch/environment: NAME=VALUE lines, the base's merged with `environment` (which wins)."""
    merged: dict[str, str] = {}
    for line in (existing or "").splitlines():
        name, sep, value = line.partition("=")
        if sep and _NAME.fullmatch(name):
            merged[name] = value
    merged.update(environment)
    return "".join(f"{name}={value}\n" for name, value in merged.items())


def environment_json(environment: Mapping[str, str],
                     existing: Mapping[str, str] | None = None) -> bytes:
    """The SIF Env.Vars object: a JSON object of the variables, the base's merged in."""
    merged = {**(existing or {}), **environment}
    return json.dumps(merged, indent=2, sort_keys=True).encode() + b"\n"


def parse_environment_json(data: bytes) -> dict[str, str]:
    """An Env.Vars object written by environment_json (anything else: empty)."""
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}
