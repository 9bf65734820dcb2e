"""Each local job in its own bubblewrap (`bwrap`) sandbox.

What a job sees: the system read-only (/usr, /etc, the /bin and /lib links, /opt),
the read-only paths the site names (the gateway's Python environment, for MPI and
mpi4py), a private /tmp, /dev basics, its own /proc, and its job directory, the one
writable path. The gateway's data directory (signing key, database, store, other
jobs' directories) is never mounted: whatever lies under a `hidden` path is covered
by an empty tmpfs, and the job directory's control files (`.gridgate/`) by a
read-only tmpfs holding only the script, so a job can neither read nor forge them.

New pid, ipc, uts, cgroup and network namespaces; a new session (no TIOCSTI into a
terminal); the sandbox dies with its runner. The network namespace has its own
loopback only, or an outbound route that never leads to the host's loopback
(adapters.local.network). Two ways to drop privileges:

- the gateway runs as an ordinary account: a user namespace (`--unshare-user`,
  `--disable-userns`) in which the job is that account, without capabilities;
- the gateway runs as root: a root-owned file stays readable to a process mapped to
  root in any user namespace, so the job must not be root at all. bwrap sets up the
  mounts as root, then `setpriv` switches to an unprivileged uid/gid (default
  `nobody`) with no capabilities, an empty bounding set and no_new_privs.

bwrap reports a program killed by signal N as exit code 128 + N (as a shell does);
the runner reads it back that way (see `wait_status_of`).
"""

from __future__ import annotations

import os
import posixpath
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.local.files import CONTROL_DIR
from adapters.local.network import NETWORKS, SLIRP4NETNS, Network, Outbound

# The system, visible read-only when present (a symlink stays a symlink).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
SETPRIV = "/usr/bin/setpriv"
# Mount points inside the sandbox (fresh tmpfs each, not the host's directories).
PRIVATE_TMP, PRIVATE_SHM = "/tmp", "/dev/shm"  # noqa: S108
# Highest signal number bwrap may report as 128 + N (Linux has 64).
_MAX_SIGNAL = 64


@dataclass(frozen=True)
class SandboxConfig:
    """How local jobs are sandboxed: stored in each job's request, read by its runner."""

    bwrap: str
    read_only: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    # When the gateway is root: the unprivileged (uid, gid) jobs run as; None otherwise.
    run_as: tuple[int, int] | None = None
    setpriv: str = SETPRIV
    system_paths: tuple[str, ...] = field(default=SYSTEM_PATHS)
    # "none": the sandbox's own loopback only; "outbound": also a route out, never to
    # the host's loopback (through `slirp4netns`).
    network: Network = "none"
    slirp4netns: str = SLIRP4NETNS

    def to_json(self) -> dict[str, object]:
        return {
            "bwrap": self.bwrap,
            "read_only": list(self.read_only),
            "hidden": list(self.hidden),
            "run_as": None if self.run_as is None else list(self.run_as),
            "setpriv": self.setpriv,
            "system_paths": list(self.system_paths),
            "network": self.network,
            "slirp4netns": self.slirp4netns,
        }

    def outbound(self) -> Outbound | None:
        """A fresh handshake for one sandbox with outbound network; None without."""
        return Outbound(self.slirp4netns) if self.network == "outbound" else None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SandboxConfig:
        def strings(key: str) -> tuple[str, ...]:
            value = data.get(key)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"sandbox {key} must be a list of strings")
            return tuple(value)

        bwrap, setpriv, run_as = data.get("bwrap"), data.get("setpriv"), data.get("run_as")
        if not isinstance(bwrap, str) or not isinstance(setpriv, str):
            raise ValueError("sandbox bwrap and setpriv must be strings")
        # Absent in requests written before jobs had a network namespace: none.
        network, slirp4netns = data.get("network", "none"), data.get("slirp4netns", SLIRP4NETNS)
        if network not in NETWORKS or not isinstance(slirp4netns, str):
            raise ValueError(f"sandbox network must be one of {', '.join(NETWORKS)}")
        pair = isinstance(run_as, list) and len(run_as) == 2
        if run_as is not None and not (pair and all(isinstance(i, int) for i in run_as)):
            raise ValueError("sandbox run_as must be [uid, gid] or null")
        return cls(
            bwrap=bwrap,
            read_only=strings("read_only"),
            hidden=strings("hidden"),
            run_as=None if run_as is None else (run_as[0], run_as[1]),
            setpriv=setpriv,
            system_paths=strings("system_paths"),
            network="outbound" if network == "outbound" else "none",
            slirp4netns=slirp4netns,
        )


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _parents(path: str) -> list[str]:
    """'/a/b/c' -> ['/a', '/a/b'] (not the path itself)."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


class _Mounts:
    """bwrap mount options in order; parents of every mount point are made 0755 first
    (bwrap would create them 0700 root, which an unprivileged job cannot traverse)."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self._dirs: set[str] = {"/"}

    def dirs_for(self, path: str) -> None:
        for parent in _parents(path):
            if parent not in self._dirs:
                self._dirs.add(parent)
                self.args += ["--perms", "0755", "--dir", parent]

    def add(self, *option: str, target: str) -> None:
        self.dirs_for(target)
        self.args += list(option)
        self._dirs.add(target)


def sandbox_argv(
    config: SandboxConfig,
    workdir: Path,
    program: Sequence[str],
    *,
    script: Path | None = None,
    shared_files: Iterable[Path] = (),
    reads: Iterable[str] = (),
    outbound: Outbound | None = None,
) -> list[str]:
    """The bwrap command line that runs `program` in `workdir`'s sandbox.

    `script` (inside the control directory) stays visible, read-only; `shared_files`
    (inputs hard-linked with the site's cache) are bound read-only, so a job cannot
    change the copy other jobs share, as are the directories in `reads` (an image the
    site's cache holds unpacked), each at its own path. With `outbound`, bwrap waits for
    it to attach.
    """
    work = str(workdir)
    mounts = _Mounts()
    for path in config.system_paths:
        if os.path.islink(path):
            mounts.add("--symlink", os.readlink(path), path, target=path)
        elif os.path.isdir(path):
            mounts.add("--ro-bind", path, path, target=path)
    mounts.add("--proc", "/proc", target="/proc")
    mounts.add("--dev", "/dev", target="/dev")
    # Shared memory for MPI ranks (UCX, nemesis): private, writable by the job's account.
    mounts.add("--perms", "1777", "--tmpfs", PRIVATE_SHM, target=PRIVATE_SHM)
    # CPU topology and interfaces for hwloc and UCX; read-only.
    if os.path.isdir("/sys"):
        mounts.add("--ro-bind", "/sys", "/sys", target="/sys")
    mounts.add("--perms", "1777", "--tmpfs", PRIVATE_TMP, target=PRIVATE_TMP)
    for path in config.read_only:
        if os.path.exists(path) and not any(_under(path, h) for h in config.hidden):
            mounts.add("--ro-bind", path, path, target=path)
    # A hidden path inside something bound above disappears: a directory under an
    # empty tmpfs, a file under /dev/null.
    for path in config.hidden:
        if not any(_under(path, p) for p in (*config.system_paths, *config.read_only)):
            continue
        if os.path.isdir(path):
            mounts.add("--tmpfs", path, target=path)
            mounts.add("--remount-ro", path, target=path)
        elif os.path.exists(path):
            mounts.add("--ro-bind", "/dev/null", path, target=path)
    mounts.add("--bind", work, work, target=work)
    control = posixpath.join(work, CONTROL_DIR)
    mounts.add("--perms", "0755", "--tmpfs", control, target=control)
    if script is not None:
        mounts.add("--ro-bind", str(script), str(script), target=str(script))
    mounts.add("--remount-ro", control, target=control)
    for shared in shared_files:
        # Its parents are the job's own directories, already there: no --dir for them.
        mounts.args += ["--ro-bind", str(shared), str(shared)]
    for path in reads:
        mounts.add("--ro-bind", path, path, target=path)

    argv = [config.bwrap, "--die-with-parent", "--new-session"]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    # Nothing listening on the host (the gateway, its database) is reachable from a job.
    argv += ["--unshare-net", *(outbound.bwrap_args() if outbound is not None else ())]
    if config.run_as is None:
        # Unprivileged: no capability survives into the sandbox, nor a nested namespace.
        argv += ["--unshare-user", "--disable-userns"]
    else:
        # As root, only what reaching the job's directory (its account's, mode 0700) and
        # setpriv need; setpriv then drops every capability with the uid change.
        argv += ["--cap-drop", "ALL"]
        for cap in ("CAP_DAC_READ_SEARCH", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
            argv += ["--cap-add", cap]
    argv += [*mounts.args, "--chdir", work, "--"]
    if config.run_as is not None:
        uid, gid = config.run_as
        argv += [config.setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                 "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return [*argv, *program]


def wait_status_of(sandboxed_status: int) -> int:
    """The program's wait status from bwrap's: exit code 128 + N means killed by N."""
    if os.WIFEXITED(sandboxed_status):
        code = os.WEXITSTATUS(sandboxed_status)
        if 128 < code <= 128 + _MAX_SIGNAL:
            return code - 128  # a wait status for "terminated by signal code - 128"
    return sandboxed_status


def hand_over(config: SandboxConfig, workdir: Path, script: Path | None) -> list[Path]:
    """Before the start: with `run_as`, give the job's account its directory and files
    (modes unchanged; symlinks never followed; the control directory stays the gateway's,
    except the script). Returns the regular files linked elsewhere (the site's staging
    cache), which the sandbox binds read-only so the job cannot change the shared copy.
    """
    shared: list[Path] = []
    owner = config.run_as
    for root, dirs, files in os.walk(workdir):
        here = Path(root)
        if here == workdir and CONTROL_DIR in dirs:
            dirs.remove(CONTROL_DIR)
        for name in [*files, *dirs]:
            path = here / name
            st = path.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                shared.append(path)
            if owner is not None:
                os.chown(path, *owner, follow_symlinks=False)
    if owner is not None:
        os.chown(workdir, *owner)
        if script is not None:
            os.chown(script, *owner, follow_symlinks=False)
    return shared


def probe(config: SandboxConfig, scratch_root: Path, program: Sequence[str] = ()
          ) -> str | None:
    """Run a shell in a sandbox once (its network attached), or `program`, which must
    exit 0; None when it works, else why."""
    try:
        scratch_root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.TemporaryDirectory(dir=scratch_root, prefix=".probe-") as tmp:
            workdir = Path(tmp)
            (workdir / CONTROL_DIR).mkdir(mode=0o700)
            hand_over(config, workdir, None)
            return _run_probe(config, workdir, program)
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc)


def _run_probe(config: SandboxConfig, workdir: Path, program: Sequence[str]) -> str | None:
    outbound = config.outbound()
    argv = sandbox_argv(config, workdir, program or ["/bin/sh", "-c", "echo ok > probe"],
                        outbound=outbound)
    log = workdir / CONTROL_DIR / "network.log"
    with open(log, "wb") as network_log, subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=outbound.pass_fds if outbound is not None else ()) as proc:
        try:
            if outbound is not None:
                outbound.attach(network_log.fileno())
            _, err = proc.communicate(timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            proc.kill()  # and reaped before the block pipe closes, which would release it
            proc.wait()
            # slirp4netns's last words say why (its start-up banner comes first).
            said = log.read_text("utf-8", "replace").strip().splitlines()[-3:]
            return "; ".join([str(exc), *said])
        finally:
            if outbound is not None:
                outbound.stop()
    if proc.returncode != 0 or (not program and (workdir / "probe").read_text() != "ok\n"):
        why = err.decode("utf-8", "replace").strip()
        return why or f"bwrap exited with {proc.returncode}"
    return None
