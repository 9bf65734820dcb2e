"""`gridgate submit` and `gridgate estimate` upload a container image that the spec names
as a file on this machine (`container.image: ./app.sif`), as they do local inputs: once
(a complete upload of the same file is used again), and name a missing one before
anything is sent. The test gateway's only site is the local one, which runs the image with
ch-run when the gateway runs as root (tests/worker/test_local_containers.py) and otherwise
refuses the job, naming why, after the gateway read the uploaded image."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from gateway.cli import errors
from tests.cli.helpers import Cli
from tests.containers.conftest import build, make_rootfs, need


def test_a_local_image_is_uploaded_once_by_estimate_and_submit(cli: Cli, tmp_path: Path) -> None:
    need("mksquashfs")
    work = tmp_path / "work"
    work.mkdir()
    build(make_rootfs(tmp_path / "root"), work / "app.sif")
    (work / "job.yaml").write_text(
        "name: c\nexecutable: /bin/sh\ncontainer: {image: ./app.sif}\n")
    estimated = cli("estimate", str(work / "job.yaml"), code=None)
    assert "Image " in estimated.stderr and " is upload " in estimated.stderr, estimated.stderr
    if os.geteuid() == 0:
        assert "Site 'local' has the earliest predicted completion" in estimated.stdout
        cli("submit", str(work / "job.yaml"))
    else:
        assert "offers no container runtime" in estimated.stdout + estimated.stderr
        submitted = cli("submit", str(work / "job.yaml"), code=errors.PROBLEM)
        assert "offers no container runtime" in submitted.stderr, submitted.stderr
    uploads = cli.json("uploads")["items"]
    assert [u["sha256"] for u in uploads] == [
        hashlib.sha256((work / "app.sif").read_bytes()).hexdigest()]


def test_a_missing_local_image_is_named_before_anything_is_sent(cli: Cli,
                                                                tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(
        "name: c\nexecutable: /bin/sh\ncontainer: {image: ./nope.sif}\n")
    result = cli("submit", str(tmp_path / "job.yaml"), code=errors.FAILURE)
    assert result.stderr.startswith(
        f"error: container.image './nope.sif': there is no file {tmp_path}/nope.sif.")
    assert cli.json("uploads")["items"] == []
