"""Snakemake as a GA4GH TES client of a gateway over the testbed, for the live test and
the workflow benchmark: the federation's shared area, the engine started as a site's
account, and the image its tasks run in.

The image is built from this machine's own files: the system's Python, which made the
venv where tests/run.sh installs Snakemake 9, its TES executor and the `fs` storage plugin
(VENV), that venv's packages, bash, rsync (the `fs` plugin copies with it) and the tools
the test workflow's rules call.

Each task's script starts with `pip install --target .snakemake/pip-deployments
snakemake-storage-plugin-fs` (the executor always deploys the storage plugin): the
testbed's sites reach no package index, so the image's pip reads the plugin's wheels
from /opt/wheels (`PIP_NO_INDEX`, `PIP_FIND_LINKS`), as an offline site's image would.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

from gateway.accounting.units import milli
from gateway.auth.accounts import create_local_user
from gateway.auth.tokens import issue_access_token
from gateway.db.engine import transaction
from gateway.repositories.jobs.rows import personal_project
from gateway.runtime import Runtime
from gateway.services.money import allocations
from gateway.services.money.allocations import Grant
from tests.conftest import ALL_SCOPES
from tests.containers.conftest import copy_libraries, make_rootfs
from tests.registry.fixture import Registry, push_image
from tests.registry.test_registry_run_live import tree_layer

VENV = Path("/opt/gridgate-tests/snakemake")
FEDERATION = Path("/srv/gridgate-federation")  # the testbed sites' bind prefix
SITE_ACCOUNT = 2001  # gwcomm at every testbed site: the account the tasks run as
SITE_PACKAGES = "opt/snakemake/site-packages"
WHEELS = "opt/wheels"
ENV = ["PATH=/bin:/usr/bin", f"PYTHONPATH=/{SITE_PACKAGES}", "PIP_NO_INDEX=1",
       f"PIP_FIND_LINKS=/{WHEELS}", "PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1",
       "HOME=/tmp"]
# bash runs each job's script and Snakemake's shell commands; the rest the rules call.
PROGRAMS = ("bash", "rsync", "mkdir", "rm", "cat", "cp", "mv", "ls", "touch", "env", "seq",
            "awk", "sleep")
_SKIPPED = shutil.ignore_patterns("test", "idlelib", "tkinter", "turtledemo", "ensurepip",
                                  "lib2to3", "site-packages", "dist-packages", "config-3*")
PIP = "#!/bin/python\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n"


def _interpreter() -> tuple[Path, Path]:
    """The venv's real interpreter and its standard library directory."""
    said = subprocess.run(
        [str(VENV / "bin/python"), "-c",
         "import os, sys, sysconfig; print(os.path.realpath(sys._base_executable)); "
         "print(sysconfig.get_paths()['stdlib'])"],
        capture_output=True, text=True, check=True).stdout.split("\n")
    return Path(said[0]), Path(said[1])


def snakemake_rootfs(root: Path) -> Path:
    """The image's root file system at `root` (see module)."""
    make_rootfs(root, *PROGRAMS)
    python, stdlib = _interpreter()
    (root / str(python.parent).lstrip("/")).mkdir(parents=True, exist_ok=True)
    shutil.copy2(python, root / str(python).lstrip("/"))
    copy_libraries(root, python)
    shutil.copytree(stdlib, root / str(stdlib).lstrip("/"), ignore=_SKIPPED, symlinks=True)
    packages = next((VENV / "lib").glob("python3*/site-packages"))
    shutil.copytree(packages, root / SITE_PACKAGES, symlinks=True)
    shutil.copytree(VENV / "wheels", root / WHEELS)
    for extension in (*stdlib.rglob("*.so"), *packages.rglob("*.so")):
        copy_libraries(root, extension)
    (root / "bin/python").symlink_to(python)
    (root / "bin/pip").write_text(PIP)
    (root / "bin/pip").chmod(0o755)
    (root / "tmp").mkdir(exist_ok=True)
    return root


def push_snakemake_image(registry: Registry, root: Path) -> str:
    """Build the image in `root` and push it to `registry`; its reference."""
    push_image(registry, "lab/snakemake", "9", [tree_layer(snakemake_rootfs(root))], ENV)
    return f"{registry.host}/lab/snakemake:9"


@contextlib.contextmanager
def federation_area() -> Iterator[Path]:
    """A fresh part of the federation's shared area (removed after), with ada's directory
    in it, the site account's (as a shared file system's directory for the jobs is)."""
    base = FEDERATION / f"test-{uuid.uuid4().hex[:8]}"
    (base / "ada").mkdir(parents=True)
    os.chown(base / "ada", SITE_ACCOUNT, SITE_ACCOUNT)
    try:
        yield base
    finally:
        shutil.rmtree(base)
        with contextlib.suppress(OSError):  # another test's part is still there
            FEDERATION.rmdir()


def user_token(runtime: Runtime, name: str, sites: Sequence[str] = ()) -> str:
    """A token of the new local user `name` of the gateway `runtime` stands for; with
    `sites`, their personal project gets an allocation there."""
    now = runtime.clock()
    with transaction(runtime.sessions) as session:
        user_id = create_local_user(session, name, "correct horse battery").id
        if sites:
            project = personal_project(session.connection(), user_id)
            assert project is not None
            allocations.grant(session, Grant(project.name, "*", milli(100),
                                             now - timedelta(days=1), now + timedelta(days=30)),
                              set(sites), "committee", "snakemake", now)
    return issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                              client_id="tests", scope=ALL_SCOPES, username=name).token


def start_engine(url: str, token: str, image: str, user_dir: Path, snakefile: str,
                 options: Sequence[str]) -> subprocess.Popen[str]:
    """Snakemake running `snakefile` through the TES of the gateway at `url` as the site
    account, in `user_dir`/workflow, its storage in `user_dir`/storage (see module); its
    output is the process's stdout."""
    home, workflow = user_dir / "home", user_dir / "workflow"
    for directory in (home, workflow):
        directory.mkdir()
        os.chown(directory, SITE_ACCOUNT, SITE_ACCOUNT)
    (workflow / "Snakefile").write_text(snakefile)
    # The executor reads $GITHUB_WORKSPACE/funnel.log when a task fails (a CI leftover).
    (home / "funnel.log").write_text("(gridgate: see `gridgate show` of the task)\n")
    return subprocess.Popen(
        [str(VENV / "bin/snakemake"), "--executor", "tes",
         "--tes-url", f"{url}/ga4gh/tes", "--tes-token", token,
         "--container-image", image,
         "--default-storage-provider", "fs", "--default-storage-prefix",
         str(user_dir / "storage"),
         # The testbed's nodes have 512 MB; Snakemake asks 1 GB by default.
         "--default-resources", "mem_mb=0", "disk_mb=0", "--latency-wait", "30",
         # It asks after its tasks every 10 s by default: each task of a chain then ends
         # up to 10 s before the engine sees it (the tests' wall time, not what they test).
         "--seconds-between-status-checks", "1", *options],
        cwd=workflow, user=SITE_ACCOUNT, group=SITE_ACCOUNT, extra_groups=[],
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "USER": "ada", "LOGNAME": "ada",
             "GITHUB_WORKSPACE": str(home)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
