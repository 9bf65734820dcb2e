"""Bind mounts: relative to the job directory, or under a prefix the site allows; nothing else."""

from __future__ import annotations

import pytest

from containers.binds import Bind, Mount, check_absolute, resolve, resolve_all
from containers.errors import ContainerError, InvalidBind

JOB = "/scratch/gw-1b2c"
SHARED = ("/shared/data", "/opt/refdata")

ACCEPTED = [
    (Bind("inputs", "/data"), Mount(f"{JOB}/inputs", "/data")),
    (Bind("a/b/c.txt", "/in/c.txt", read_only=True), Mount(f"{JOB}/a/b/c.txt", "/in/c.txt", True)),
    (Bind(".hidden", "/h"), Mount(f"{JOB}/.hidden", "/h")),
    (Bind("with space", "/x y"), Mount(f"{JOB}/with space", "/x y")),
    (Bind("/shared/data", "/data"), Mount("/shared/data", "/data")),
    (Bind("/shared/data/genomes/hg38", "/ref", True), Mount("/shared/data/genomes/hg38", "/ref",
                                                            True)),
    (Bind("/opt/refdata/x", "/x"), Mount("/opt/refdata/x", "/x")),
]


@pytest.mark.parametrize(("bind", "mount"), ACCEPTED, ids=[b.src for b, _ in ACCEPTED])
def test_accepted_binds_resolve_to_host_paths(bind: Bind, mount: Mount) -> None:
    assert resolve(bind, JOB, SHARED) == mount


REFUSED = [
    (Bind("../other-job", "/x"), "contains a '..' segment"),
    (Bind("a/../../b", "/x"), "contains a '..' segment"),
    (Bind("a//b", "/x"), "empty or '.' segment"),
    (Bind("./a", "/x"), "empty or '.' segment"),
    (Bind("a/", "/x"), "empty or '.' segment"),
    (Bind("", "/x"), "is empty"),
    (Bind("~/secrets", "/x"), "not start with '~'"),
    (Bind("a\nb", "/x"), "control character"),
    (Bind("a\x00b", "/x"), "control character"),
    (Bind("a:b", "/x"), "contains ':'"),
    (Bind("a,b", "/x"), "contains ','"),
    (Bind(".gridgate/script", "/x"), "control directory .gridgate/"),
    (Bind("/etc", "/etc"), "outside the job directory"),
    (Bind("/shared/database", "/x"), "outside the job directory"),  # a prefix by segments only
    (Bind("/shared/data/../../etc", "/x"), "'..' segment"),
    (Bind("data", "relative"), "bind destination 'relative' is not an absolute path"),
    (Bind("data", "/"), "is the root directory"),
    (Bind("data", "/x/../y"), "'..' segment"),
    (Bind("data", "/x:ro"), "contains ':'"),
    (Bind("data", "/x\n"), "control character"),
    (Bind("data", "/" + "d" * 4096), "longer than 4096"),
]


@pytest.mark.parametrize(("bind", "message"), REFUSED, ids=[repr(b.src) for b, _ in REFUSED])
def test_refused_binds_say_why(bind: Bind, message: str) -> None:
    with pytest.raises(InvalidBind) as caught:
        resolve(bind, JOB, SHARED)
    assert message in str(caught.value)
    assert isinstance(caught.value, ContainerError)


def test_without_shared_areas_absolute_sources_are_refused() -> None:
    with pytest.raises(InvalidBind, match=r"\(this site allows none\)"):
        resolve(Bind("/shared/data", "/d"), JOB)
    with pytest.raises(InvalidBind, match="under /shared/data, /opt/refdata"):
        resolve(Bind("/home/other", "/d"), JOB, SHARED)


def test_two_binds_onto_one_path_are_refused() -> None:
    assert resolve_all([Bind("a", "/a"), Bind("b", "/b")], JOB) == (
        Mount(f"{JOB}/a", "/a"), Mount(f"{JOB}/b", "/b"))
    with pytest.raises(InvalidBind, match="two binds end at '/a'"):
        resolve_all([Bind("a", "/a"), Bind("b", "/a")], JOB)


def test_the_job_directory_itself_must_be_a_plain_absolute_path() -> None:
    with pytest.raises(InvalidBind, match="the job directory 'scratch/x' is not an absolute"):
        resolve(Bind("a", "/a"), "scratch/x")
    assert check_absolute("/a/b", "x") == "/a/b"


def test_mount_spec_is_apptainers_bind_form() -> None:
    assert Mount("/h/a", "/g").spec == "/h/a:/g"
    assert Mount("/h/a", "/g", read_only=True).spec == "/h/a:/g:ro"
