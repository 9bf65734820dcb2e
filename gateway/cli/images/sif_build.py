"""`gridgate image build`'s work on this machine: stage a root file system, pack it with
mksquashfs, wrap it with siftool as the SIF's primary system partition.

The pure parts (definition, argv, environment files, the SIF reader) are in containers/;
this module does the file system and the subprocesses.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from containers.errors import DefinitionError, SifFormatError
from containers.image import definition as image_def
from containers.image import tools as image_tools
from containers.image.definition import ImageDefinition
from containers.image.digest import sha256_of
from containers.image.sif import (
    ARCH_CODES,
    DataType,
    FsType,
    SifImage,
    read_object,
    read_sif,
)
from gateway import local_tools

SKELETON_DIRS, SKELETON_FILES = image_def.SKELETON_DIRS, image_def.SKELETON_FILES
MAX_SYMLINKS = 40  # as the kernel's ELOOP limit


class ImageError(Exception):
    """A local failure of `gridgate image`; the message says what to do."""


@dataclass(frozen=True)
class BuiltImage:
    path: Path
    sha256: str
    size: int
    partition_offset: int
    partition_size: int
    environment: dict[str, str]


def run_tool(argv: list[str], what: str) -> str:
    """Run `argv`; its stdout. A missing tool or a failure raises ImageError."""
    return local_tools.run_tool(argv, what, ImageError)


def load_sif(path: Path) -> SifImage:
    """The parsed header and descriptors of the SIF at `path`."""
    with path.open("rb") as stream:
        return read_sif(stream)


def is_sif(path: Path) -> bool:
    try:
        load_sif(path)
    except (SifFormatError, OSError):
        return False
    return True


def squashfs_partition(path: Path, image: SifImage) -> tuple[int, int]:
    """(offset, size) of the image's primary partition, which must be SquashFS."""
    primary = image.primary_partition()
    assert primary.partition is not None
    if primary.partition.fs_type != FsType.SQUASHFS:
        raise ImageError(f"{path}: the primary partition is "
                         f"{primary.partition.description}, not SquashFS.")
    return primary.offset, primary.size


def inside(root: Path, dest: PurePosixPath) -> Path:
    """Where absolute image path `dest` is under `root`: symlinks in its directories are
    followed as the image sees them (an absolute link stays in the image, never reaches the
    host's own files), missing directories are made; the last name is not followed."""
    pending = list(dest.parts[1:])
    current = PurePosixPath("/")
    hops = 0
    while len(pending) > 1:
        name = pending.pop(0)
        candidate = root.joinpath(*current.parts[1:], name)
        if candidate.is_symlink():
            hops += 1
            if hops > MAX_SYMLINKS:
                raise ImageError(f"{dest}: too many symbolic links in the image.")
            target = os.readlink(candidate)
            joined = target if target.startswith("/") else f"{current}/{target}"
            resolved = PurePosixPath(posixpath.normpath("/" + joined.lstrip("/")))
            pending = [*resolved.parts[1:], *pending]
            current = PurePosixPath("/")
            continue
        if not candidate.exists():
            candidate.mkdir(mode=0o755)
        elif not candidate.is_dir():
            raise ImageError(f"{current / name} is a file in the image, not a directory "
                             f"(needed for {dest}).")
        current = current / name
    return root.joinpath(*current.parts[1:], *pending)


def _write(path: Path, data: bytes, mode: int) -> None:
    # The staged tree may hard-link the base's files: replace, never write through a link.
    if os.path.lexists(path):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(path, mode)  # past the umask


def _put(source: Path, target: Path, *, follow: bool) -> None:
    if target.is_dir() and not target.is_symlink():
        raise ImageError(f"{target.name}: a directory of that name is in the image; name "
                         f"the file's full path.")
    if os.path.lexists(target):
        target.unlink()
    shutil.copy2(source, target, follow_symlinks=follow)


def install(source: Path, root: Path, dest: PurePosixPath) -> None:
    """Copy host file or directory `source` to image path `dest`."""
    if not source.exists():
        raise ImageError(f"files: {source}: no such file or directory.")
    if not source.is_dir():
        _put(source, inside(root, dest), follow=True)
        return
    target = inside(root, dest)
    if not os.path.lexists(target):
        target.mkdir(mode=0o755)
    for dirpath, dirnames, filenames in os.walk(source):
        here = Path(dirpath)
        rel = PurePosixPath(here.relative_to(source).as_posix())
        for name in [*dirnames, *filenames]:
            path = here / name
            where = inside(root, dest / rel / name)
            if path.is_dir() and not path.is_symlink():
                if not os.path.lexists(where):
                    where.mkdir(mode=0o755)
            else:
                _put(path, where, follow=False)  # links inside a tree stay links


def _stage_directory(base: Path, root: Path) -> None:
    # Hard links first (no copy of a large tree); a copy across file systems, or where the
    # kernel refuses links to others' files (fs.protected_hardlinks).
    root.mkdir()
    try:
        run_tool(["cp", "-al", f"{base}/.", str(root)], "Linking the base")
    except ImageError:
        _remove(root)
        root.mkdir()
        run_tool(["cp", "-a", f"{base}/.", str(root)], "Copying the base")


def _stage_sif(base: Path, root: Path) -> dict[str, str]:
    """Unpack a base SIF's primary partition; its Env.Vars environment."""
    image = load_sif(base)
    offset, _ = squashfs_partition(base, image)
    run_tool(image_tools.unsquashfs_extract_argv(str(base), offset, str(root)),
             f"Unpacking {base}")
    environment: dict[str, str] = {}
    with base.open("rb") as stream:
        for descriptor in image.objects(DataType.ENV_VARS):
            environment.update(image_def.parse_environment_json(read_object(stream, descriptor)))
    return environment


def skeleton(root: Path) -> None:
    """The mount points a runtime needs, where the root file system lacks them."""
    for name, mode in SKELETON_DIRS.items():
        path = inside(root, PurePosixPath(name))
        if not os.path.lexists(path):
            path.mkdir()
            os.chmod(path, mode)
    for name in SKELETON_FILES:
        path = inside(root, PurePosixPath(name))
        if not os.path.lexists(path):
            _write(path, b"", 0o644)


def _existing(path: Path) -> str | None:
    return path.read_text() if path.is_file() and not path.is_symlink() else None


def write_environment(root: Path, environment: dict[str, str]) -> None:
    """The environment as Apptainer (90-environment.sh) and ch-run (/ch/environment) read it."""
    script = inside(root, PurePosixPath(image_def.APPTAINER_ENV))
    existing = _existing(script)
    if environment or existing is None:
        text = image_def.environment_script(environment, existing)
        _write(script, text.encode(), 0o755)
    if environment:
        ch_env = inside(root, PurePosixPath(image_def.CHARLIECLOUD_ENV))
        text = image_def.charliecloud_environment(environment, _existing(ch_env))
        _write(ch_env, text.encode(), 0o644)


def _remove(path: Path) -> None:
    # An unprivileged unpack can leave read-only directories: make them removable first.
    if not path.exists():
        return
    for dirpath, _, _ in os.walk(path):
        os.chmod(dirpath, 0o700)
    shutil.rmtree(path)


def read_definition(path: Path) -> tuple[ImageDefinition, str]:
    """The definition in file `path`, and its text (stored in the SIF)."""
    import yaml  # here: only `image build DEFFILE` pays for it

    try:
        text = path.read_text()
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ImageError(f"{path}: not a readable YAML definition ({exc}).") from None
    try:
        return image_def.parse_definition(data), text
    except DefinitionError as exc:
        raise ImageError(f"{path}: {exc}") from None


def build_image(source: Path, output: Path, *, arch: str, force: bool = False,
                say: Callable[[str], None] = lambda _: None) -> BuiltImage:
    """Build SIF `output` from directory `source` or from definition file `source`."""
    if arch not in ARCH_CODES:
        raise ImageError(f"Unknown architecture {arch!r}; one of "
                         f"{', '.join(sorted(ARCH_CODES))}.")
    if output.exists() and (output.is_dir() or not force):
        raise ImageError(f"{output} exists" + ("." if output.is_dir()
                                               else "; --force replaces it."))
    if not output.parent.is_dir():
        raise ImageError(f"{output.parent}: no such directory for the image.")
    definition, text = None, None
    if source.is_dir():
        base = source
    elif source.is_file():
        if is_sif(source):
            raise ImageError(f"{source} is a SIF image already; to build on it, write a "
                             f"definition with 'from: {source.name}'.")
        definition, text = read_definition(source)
        base = source.parent / definition.base
    else:
        raise ImageError(f"{source}: no such directory (a root file system) or definition "
                         f"file.")
    if base.is_dir() and output.parent.resolve().is_relative_to(base.resolve()):
        # The staging directory sits beside the output: it would be packed into itself.
        raise ImageError(f"{output} is inside the root file system {base}; write the image "
                         f"somewhere else.")
    stage = Path(tempfile.mkdtemp(prefix=".gridgate-build-", dir=output.parent))
    try:
        root = stage / "root"
        environment: dict[str, str] = {}
        if base.is_dir():
            say(f"Staging {base}")
            _stage_directory(base, root)
        elif base.is_file() and is_sif(base):
            say(f"Unpacking {base}")
            environment = _stage_sif(base, root)
        else:
            raise ImageError(f"from: {base} is neither a directory nor a SIF image.")
        own = dict(definition.environment) if definition else {}
        if definition:
            for src, dest in definition.files:
                install(source.parent / src, root, dest)
        skeleton(root)
        write_environment(root, own)
        environment.update(own)
        say(f"Packing the root file system into SquashFS ({arch})")
        partial = local_tools.pack_sif(root, stage, arch, environment, ImageError,
                                       all_root=os.geteuid() != 0,
                                       definition=None if text is None else (source.name, text))
        os.replace(partial, output)
    finally:
        _remove(stage)
    image = load_sif(output)
    offset, size = squashfs_partition(output, image)
    with output.open("rb") as stream:
        digest = sha256_of(stream)
    return BuiltImage(output, digest, image.file_size, offset, size, environment)
