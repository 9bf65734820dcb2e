"""Every launch line against the options its runtime's release accepts, as recorded.

`recorded/exec-options/` holds the option tables of `apptainer exec --help`, `singularity
exec --help` (SingularityCE) and `ch-run --help`, one file per release, read from each
project's source at that release's tag (Apptainer is not packaged for this machine's
Debian, so these are recordings, not runs; ch-run 0.31 also runs live in
test_image_charliecloud and test_launch_charliecloud_live). The releases are the
gateway's oldest accepted (MIN_RUNTIME_VERSION), the one before it, and later ones up to
the newest tagged. Each case of test_launch is built again for every accepted release (an
apptainer case for singularity too) and its options are checked: each is one that
release accepts, and takes a value exactly when the line gives it one. The release before
the oldest lacks the option the minimum names.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from containers.launch import ContainerRun, Launcher, container_argv
from containers.runtimes import MIN_RUNTIME_VERSION, RuntimeKind
from containers.site_caps import RuntimeOffer
from containers.versions import Version, version
from tests.containers.conftest import need
from tests.containers.test_launch import CASES

RECORDED = Path(__file__).parent / "recorded" / "exec-options"
FILE_PREFIX = {RuntimeKind.APPTAINER: "apptainer-", RuntimeKind.SINGULARITY: "singularity-ce-",
               RuntimeKind.CHARLIECLOUD: "ch-run-"}
# pflag: `-B, --bind stringArray` / `    --no-eval` [`    (hidden)`];
# argp: `-b, --bind=SRC[:DST]` / `    --set-env[=ARG]` / `    --env-no-expand`.
PFLAG_LINE = re.compile(r"(?:-(\w), |    )--([\w-]+)(?: (\w+))?(?: +\(hidden\))?")
ARGP_LINE = re.compile(r"(?:-(\w), |    )--([\w-]+)(\[=[^]]+\]|=\S+)?")


@dataclass(frozen=True)
class Options:
    """One release's options: long name -> "value" | "switch" | "optional" (argp's
    `[=ARG]`, given only as `--name=ARG`); short letter -> long name."""

    kinds: dict[str, str]
    short: dict[str, str]


def read_options(path: Path) -> Options:
    kinds: dict[str, str] = {}
    short: dict[str, str] = {}
    argp = path.name.startswith("ch-run-")
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        match = (ARGP_LINE if argp else PFLAG_LINE).fullmatch(line)
        assert match, f"{path.name}: unreadable line {line!r}"
        letter, name, value = match.groups()
        kinds[name] = ("switch" if not value else
                       "optional" if argp and value.startswith("[") else "value")
        if letter:
            short[letter] = name
    return Options(kinds, short)


def releases(kind: RuntimeKind) -> list[tuple[Version, Path]]:
    prefix = FILE_PREFIX[kind]
    found = [(version(p.name[len(prefix):-len(".txt")]), p)
             for p in RECORDED.glob(f"{prefix}*.txt")]
    return sorted(found)


def runtime_words(run: ContainerRun, argv: list[str]) -> list[str]:
    """The runtime's options: after `exec` (apptainer, singularity) or the command (ch-run)
    up to the image."""
    start = argv.index(run.runtime.argv[-1]) + 1
    if run.runtime.kind is not RuntimeKind.CHARLIECLOUD:
        assert argv[start] == "exec"
        start += 1
    return argv[start:argv.index(run.image, start)]


def unknown_or_misused(words: list[str], options: Options) -> list[str]:
    """What in `words` the release would not take as the line means it."""
    problems, i = [], 0
    while i < len(words):
        word = words[i]
        if word.startswith("--"):
            name, eq, _ = word[2:].partition("=")
        elif re.fullmatch(r"-\w", word):
            name, eq = options.short.get(word[1], f"?{word}"), ""
        else:
            problems.append(f"{word!r} is not an option")
            i += 1
            continue
        kind = options.kinds.get(name)
        if kind is None:
            problems.append(f"{word!r} is unknown")
        elif kind == "switch" and eq:
            problems.append(f"{word!r} gives a value to a switch")
        elif kind == "value" and not eq:
            i += 1  # its value is the next word
            if i == len(words):
                problems.append(f"{word!r} lacks its value")
        i += 1
    return problems


ACCEPTED = [(kind, ver, path) for kind in FILE_PREFIX for ver, path in releases(kind)
            if ver >= MIN_RUNTIME_VERSION[kind][0]]


def test_each_runtime_has_recorded_releases_around_its_oldest_accepted() -> None:
    for kind, (least, _) in MIN_RUNTIME_VERSION.items():
        found = [v for v, _ in releases(kind)]
        assert least in found and any(v < least for v in found), kind
        assert sum(v > least for v in found) >= 2, kind


@pytest.mark.parametrize(("kind", "release", "path"), ACCEPTED,
                         ids=[p.stem for _, _, p in ACCEPTED])
def test_every_launch_line_uses_options_the_release_accepts(
        kind: RuntimeKind, release: Version, path: Path) -> None:
    options = read_options(path)
    checked = 0
    for name, spec, launcher, _, _ in CASES:
        assert isinstance(spec, ContainerRun) and isinstance(launcher, Launcher)
        charliecloud = RuntimeKind.CHARLIECLOUD
        if (spec.runtime.kind is charliecloud) != (kind is charliecloud):
            continue  # apptainer's lines are singularity's too, with its own command
        command = spec.runtime.command if spec.runtime.kind is kind else ()
        run = dataclasses.replace(spec, runtime=RuntimeOffer(kind, release, command))
        argv = container_argv(run, launcher)
        assert unknown_or_misused(runtime_words(run, argv), options) == [], name
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("kind", list(FILE_PREFIX))
def test_the_release_before_the_oldest_lacks_what_the_minimum_names(
        kind: RuntimeKind) -> None:
    least, flag = MIN_RUNTIME_VERSION[kind]
    before = max(p for v, p in releases(kind) if v < least)
    at = next(p for v, p in releases(kind) if v == least)
    # "--no-eval", or "ch-run --set-env=NAME=VALUE": the option's name.
    name = re.search(r"--([\w-]+)", flag)
    assert name is not None
    if kind is RuntimeKind.CHARLIECLOUD:
        # 0.25 has --set-env=FILE only; 0.26 made the value optional and added NAME=VALUE.
        assert read_options(before).kinds[name[1]] == "value"
        assert read_options(at).kinds[name[1]] == "optional"
    else:
        assert name[1] not in read_options(before).kinds
        assert read_options(at).kinds[name[1]] == "switch"


def test_the_checker_catches_what_a_release_would_refuse() -> None:
    options = read_options(RECORDED / "apptainer-1.0.3.txt")
    assert unknown_or_misused(["--no-eval", "--bind"], options) == [
        "'--no-eval' is unknown", "'--bind' lacks its value"]
    ch = read_options(RECORDED / "ch-run-0.25.txt")
    assert unknown_or_misused(["--join-ct", "2", "--set-env", "IMAGE"], ch) == []  # FILE=IMAGE
    assert unknown_or_misused(["-w=1", "x"], read_options(RECORDED / "ch-run-0.31.txt")) == [
        "'-w=1' is not an option", "'x' is not an option"]


def test_the_recording_of_ch_run_matches_the_installed_ch_run() -> None:
    """LIVE: Debian's ch-run 0.31 prints the options its source recording lists (the way
    every recording here was made, checked where the runtime runs)."""
    need("ch-run")
    done = subprocess.run(["ch-run", "--help"], capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "USER": "nobody"}, check=True)
    live: dict[str, str] = {}
    for line in done.stdout.splitlines():
        match = re.fullmatch(r"  (?:-(.), |    )--([\w-]+)(\[=\w+\]|=\S+)?\s+.*", line)
        if match and match[2] not in ("help", "usage"):  # argp's own
            live[match[2]] = ("switch" if not match[3] else
                              "optional" if match[3].startswith("[") else "value")
    assert live == read_options(RECORDED / "ch-run-0.31.txt").kinds
