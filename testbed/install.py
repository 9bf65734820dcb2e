"""Install the testbed's Debian packages (root, Debian 12) and build its Toxiproxy (the WAN
links' delay, from the Go module proxy): `python3 -m testbed.install`.

Standard library only, so it runs with the system Python before the project's venv
exists. It returns at once (no apt call) when every package is already installed.

While apt runs, a `/usr/sbin/policy-rc.d` that exits 101 stops the packages from
starting their daemons (the testbed starts its own, inside namespaces); it is removed
afterwards unless it was there before. Grid Engine's debconf questions are preseeded
so the install never prompts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

PACKAGES: tuple[str, ...] = (
    "munge", "slurmctld", "slurmd", "slurm-client", "slurmdbd", "mariadb-server",
    "gridengine-master", "gridengine-exec", "gridengine-client",
    "mpich", "libmpich-dev", "openmpi-bin", "libopenmpi-dev",
    # MPI programs are compiled at the sites (mpicc); said explicitly, not left to Recommends.
    "gcc", "libc6-dev",
    "openssh-server", "openssh-client", "iproute2", "util-linux", "procps",
)
POLICY_RC = Path("/usr/sbin/policy-rc.d")
# The WAN links' delay (testbed.wan): built from the Go module proxy, pinned.
TOXIPROXY_VERSION = "v2.5.0"
TOXIPROXY_BIN = Path("/opt/gridgate-tests/bin/toxiproxy-server")
# The master host name in the package's own cell is rewritten per site at `up`; the
# preseed only has to make the install non-interactive and create the `default` cell.
GRIDENGINE_PRESEED = """\
gridengine-common shared/gridengineconfig boolean true
gridengine-common shared/gridenginecell string default
gridengine-common shared/gridenginemaster string galaxy
gridengine-master shared/gridengineconfig boolean true
gridengine-master shared/gridenginecell string default
gridengine-master shared/gridenginemaster string galaxy
gridengine-exec shared/gridengineconfig boolean true
gridengine-exec shared/gridenginecell string default
gridengine-exec shared/gridenginemaster string galaxy
gridengine-client shared/gridengineconfig boolean true
gridengine-client shared/gridenginecell string default
gridengine-client shared/gridenginemaster string galaxy
"""


def missing_packages(packages: Sequence[str] = PACKAGES) -> list[str]:
    """The packages of `packages` that dpkg does not report as installed."""
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\n", *packages],
        capture_output=True, text=True, check=False)
    installed = {line.split()[0] for line in proc.stdout.splitlines()
                 if line.endswith(" installed")}
    return [p for p in packages if p not in installed]


def _apt(args: Sequence[str], quiet: bool = False) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive",
           "DEBCONF_NONINTERACTIVE_SEEN": "true"}
    subprocess.run(["apt-get", *args], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL if quiet else None)


def install(packages: Sequence[str] = PACKAGES, *, quiet: bool = False) -> list[str]:
    """Install whatever of `packages` is missing; return what was installed."""
    missing = missing_packages(packages)
    if not missing:
        return []
    if os.geteuid() != 0:
        raise PermissionError(f"root is needed to install: {' '.join(missing)}")
    started = time.monotonic()
    if not quiet:
        print(f"==> testbed: installing {' '.join(missing)} (apt)", flush=True)
    created_policy = not POLICY_RC.exists()
    if created_policy:
        POLICY_RC.write_text("#!/bin/sh\nexit 101\n")
        POLICY_RC.chmod(0o755)
    try:
        subprocess.run(["debconf-set-selections"], input=GRIDENGINE_PRESEED, text=True,
                       check=True)
        install_argv = ["install", "-y", "-qq", "--no-install-recommends", *missing]
        try:
            # Package lists fresh enough (e.g. tests/run.sh just updated them) save an update.
            _apt(install_argv, quiet=True)
        except subprocess.CalledProcessError:
            _apt(["update", "-qq"])
            _apt(install_argv)
    finally:
        if created_policy:
            POLICY_RC.unlink(missing_ok=True)
    still = missing_packages(packages)
    if still:
        raise RuntimeError(f"apt finished but these are not installed: {' '.join(still)}")
    if not quiet:
        print(f"==> testbed: packages installed in {time.monotonic() - started:.0f}s", flush=True)
    return missing


def install_toxiproxy(quiet: bool = False) -> bool:
    """Build toxiproxy-server from the Go module proxy into TOXIPROXY_BIN (root, Go on the
    machine); whether it was built."""
    if TOXIPROXY_BIN.exists():
        return False
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).exists():
        raise RuntimeError("Go is needed to build toxiproxy-server (the testbed's WAN links)")
    if not quiet:
        print(f"==> testbed: building toxiproxy-server {TOXIPROXY_VERSION} (go install)",
              flush=True)
    build = TOXIPROXY_BIN.parent / "build"
    build.mkdir(parents=True, exist_ok=True)
    subprocess.run([go, "install", f"github.com/Shopify/toxiproxy/v2/cmd/server@"
                    f"{TOXIPROXY_VERSION}"], check=True, capture_output=quiet,
                   env={**os.environ, "GOBIN": str(build), "GOFLAGS": "-mod=mod"})
    (build / "server").replace(TOXIPROXY_BIN)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: install missing packages; `--check` only lists them (rc 1)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--check" in args:
        missing = missing_packages()
        for name in missing:
            print(name)
        if not TOXIPROXY_BIN.exists():
            print(f"toxiproxy-server {TOXIPROXY_VERSION}")
        return 1 if missing or not TOXIPROXY_BIN.exists() else 0
    try:
        install()
        install_toxiproxy()
    except (PermissionError, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"testbed.install: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
