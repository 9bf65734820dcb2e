"""A site's private /etc: a copy of the host's that follows it, file by file."""

from __future__ import annotations

import os
from pathlib import Path

from testbed.files import copy_host_etc


def _host(tmp_path: Path) -> Path:
    src = tmp_path / "host-etc"
    (src / "alternatives").mkdir(parents=True)
    (src / "ssh").mkdir()
    (src / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (src / "ssh/sshd_config").write_text("host's\n")
    (src / "secret").write_text("0600\n")
    (src / "secret").chmod(0o600)
    (src / "alternatives/mpirun").symlink_to("/usr/bin/mpirun.mpich")
    (src / "mtab").symlink_to("../proc/self/mounts")
    return src


def test_copies_files_links_and_modes_but_not_the_sites_own(tmp_path: Path) -> None:
    src, dest = _host(tmp_path), tmp_path / "site-etc"
    copy_host_etc(dest, frozenset({"passwd", "ssh"}), source=src)
    assert not (dest / "passwd").exists() and not (dest / "ssh").exists()
    assert (dest / "secret").read_text() == "0600\n"
    assert (dest / "secret").stat().st_mode & 0o777 == 0o600
    assert os.readlink(dest / "alternatives/mpirun") == "/usr/bin/mpirun.mpich"
    assert os.readlink(dest / "mtab") == "../proc/self/mounts"


def test_again_rewrites_only_what_the_host_changed(tmp_path: Path) -> None:
    src, dest = _host(tmp_path), tmp_path / "site-etc"
    skip = frozenset({"passwd"})
    copy_host_etc(dest, skip, source=src)
    (dest / "ssh/site-file").write_text("the site's own\n")
    kept = (dest / "secret").stat().st_ino
    changed = (dest / "ssh/sshd_config").stat().st_ino
    (src / "ssh/sshd_config").write_text("host's, changed\n")
    os.utime(src / "ssh/sshd_config", ns=(1, 1))
    copy_host_etc(dest, skip, source=src)
    assert (dest / "secret").stat().st_ino == kept  # unchanged: not written again
    assert (dest / "ssh/sshd_config").read_text() == "host's, changed\n"
    assert (dest / "ssh/sshd_config").stat().st_ino != changed  # replaced by a rename
    assert (dest / "ssh/site-file").read_text() == "the site's own\n"
