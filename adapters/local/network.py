"""A sandboxed local job's network: none of the host's, or outbound only.

Every sandbox has a network namespace of its own (`bwrap --unshare-net`): its loopback
works (MPI ranks, a job's own servers), the host's is another interface in another
namespace, so nothing that listens on the gateway host's loopback (the gateway's API,
its metrics, PostgreSQL) can be reached from a job.

`outbound` adds a route out through slirp4netns (Debian package `slirp4netns`), a
user-mode TCP/IP stack that runs beside the sandbox, in the host's namespace, and opens
the job's connections there as ordinary sockets. Two of its addresses would lead back
to the host's loopback, and both are turned off: the gateway 10.0.2.2
(`--disable-host-loopback`) and the DNS forwarder 10.0.2.3 (`--disable-dns`; it may
forward to a resolver on the host's loopback). The job's 127.0.0.1 stays its own.
IPv4 only.

Attaching is a handshake: bwrap reports its child's pid on one pipe (`--info-fd`) and
holds the program on another (`--block-fd`) until slirp4netns has configured the
interface, so the program starts with its network up. bwrap reports the pid before its
child sets up the loopback (adds 127.0.0.1, then brings `lo` up), and slirp4netns
`--configure` brings `lo` up too: started first, it makes the kernel add 127.0.0.1 by
itself and bwrap's own add fails (EEXIST, reported with a stale errno, e.g. "loopback:
Failed RTM_NEWADDR: No child processes"). So slirp4netns starts only once the
sandbox's loopback has its address.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Literal

Network = Literal["none", "outbound"]
NETWORKS: tuple[Network, ...] = ("none", "outbound")
SLIRP4NETNS = "/usr/bin/slirp4netns"
TAP = "tap0"
# slirp4netns's largest MTU: fewer, larger segments through the user-mode stack.
MTU = 65520
# How long bwrap and slirp4netns may take to reach each step of the handshake.
HANDSHAKE_SECONDS = 30.0
# A TERM meant for the job's processes (a cancel, from the runner or the gateway) must
# not take the network away during the program's grace period: slirp4netns starts with
# TERM ignored (through exec, without preexec_fn, safe in the threaded gateway) and ends
# through its exit pipe, or SIGKILL.
_IGNORING_TERM = ["/bin/sh", "-c", 'trap "" TERM; exec "$@"', "slirp4netns"]
# slirp4netns's sandbox (1.2.0) makes only "/", /etc and /run (each only if it is a
# mount point) private or slave in its new mount namespace, then lazily unmounts the old
# root: the unmount of every mount below a shared mount elsewhere propagates to the
# host's copy. Run as root in the host's mount namespace, each job's start unmounted
# every named network namespace in /run/netns (where /run is no mount point, as on CI's
# machines) and any other mount below a shared one. In a private mount namespace of its
# own, nothing it unmounts propagates.
_PRIVATE_MOUNTS = ["/usr/bin/unshare", "--mount", "--propagation", "private", "--"]
# ioctl(2) on a namespace file: the user namespace that owns it (linux/nsfs.h).
_NS_GET_USERNS = 0xB701


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _read_until(fd: int, complete: Callable[[bytes], bool], deadline: float) -> bytes:
    """Read `fd` until what came is `complete`, its end of file, or `deadline`."""
    data = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))
        chunk = os.read(fd, 4096) if ready else b""
        if not chunk:
            break
        data += chunk
        if complete(data):
            break
    return data


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def await_loopback(pid: int, netns: int, deadline: float) -> None:
    """Wait until bwrap's child `pid`, in `netns`, has given its loopback 127.0.0.1.

    Its routing table (the same for any process in `netns`) lists 127.0.0.1 from that
    add on; a pid that ended (and may be reused) is told apart by its namespace."""
    theirs = os.fstat(netns)
    while True:
        try:
            with open(f"/proc/{pid}/net/fib_trie", "rb") as table:
                routes = table.read()
            current = os.stat(f"/proc/{pid}/ns/net")
        except OSError:
            current = None
        if current is None or (current.st_dev, current.st_ino) != (theirs.st_dev,
                                                                     theirs.st_ino):
            raise OSError("bwrap's sandbox ended before its loopback was up")
        if b"127.0.0.1" in routes:
            return
        if time.monotonic() >= deadline:
            raise OSError("bwrap's sandbox did not set up its loopback in time")
        time.sleep(0.001)


class Outbound:
    """The outbound network of one sandbox: the handshake with bwrap, then slirp4netns.

    Create it before starting bwrap, pass `bwrap_args()` to bwrap and `pass_fds` to the
    process that runs it, call `attach` once bwrap runs, and `stop` when the job ended.
    """

    def __init__(self, slirp4netns: str) -> None:
        self._slirp4netns = slirp4netns
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        # Pipe ends still open, by role; each is closed once, through _drop.
        self._fds = {"info_r": info_r, "info_w": info_w, "block_r": block_r,
                     "block_w": block_w}
        self._process: subprocess.Popen[bytes] | None = None

    def _drop(self, *names: str) -> None:
        _close(*(self._fds.pop(name) for name in names if name in self._fds))

    def bwrap_args(self) -> list[str]:
        """bwrap's options: report the child's pid, hold the program until attached."""
        return ["--info-fd", str(self._fds["info_w"]), "--block-fd", str(self._fds["block_r"])]

    @property
    def pass_fds(self) -> tuple[int, int]:
        """The pipe ends bwrap must inherit."""
        return self._fds["info_w"], self._fds["block_r"]

    def attach(self, log: int) -> None:
        """After bwrap started: bring the sandbox's network up, then let its program run.

        slirp4netns writes what it says to `log`. Raises OSError when the network cannot
        be attached (the held program is then killed; kill the sandbox too)."""
        self._drop("info_w", "block_r")
        deadline = time.monotonic() + HANDSHAKE_SECONDS
        try:
            info = json.loads(_read_until(self._fds["info_r"], _is_json, deadline) or b"null")
        except ValueError:
            info = None
        if not isinstance(info, dict) or not isinstance(info.get("child-pid"), int):
            raise OSError("bwrap did not report its sandbox (it stopped before starting it)")
        pid = info["child-pid"]
        held = os.pidfd_open(pid)
        try:
            netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            try:
                await_loopback(pid, netns, deadline)
                self._start(netns, log, deadline)
            finally:
                _close(netns)
        except BaseException:
            # The program must never run without its network. Closing the block pipe
            # (stop) releases it, and bwrap's --die-with-parent does not stop it in time:
            # seen writing its file after bwrap was killed and reaped (4 probes in 300
            # under load). Killed here, while still held, it runs no further code.
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(held, signal.SIGKILL)
            raise
        finally:
            _close(held)
        os.write(self._fds["block_w"], b"1")
        self._drop("block_w", "info_r")

    def _start(self, netns: int, log: int, deadline: float) -> None:
        owner = fcntl.ioctl(netns, _NS_GET_USERNS)
        ready_r, ready_w = os.pipe()
        exit_r, self._fds["exit_w"] = os.pipe()
        argv = [self._slirp4netns, "--configure", f"--mtu={MTU}", "--disable-host-loopback",
                "--disable-dns", "--enable-seccomp", f"--ready-fd={ready_w}",
                f"--exit-fd={exit_r}"]
        if os.geteuid() == 0:
            # Its own mount namespace, no capability but binding low ports. (Unprivileged
            # it cannot: that needs root mapped in the job's user namespace, which bwrap
            # does not map.) Started in a private mount namespace: see _PRIVATE_MOUNTS.
            argv = [*_PRIVATE_MOUNTS, *argv, "--enable-sandbox"]
        argv = [*_IGNORING_TERM, *argv]
        mine = os.stat("/proc/self/ns/user")
        theirs = os.fstat(owner)
        if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
            # Unprivileged, the namespace belongs to the sandbox's user namespace, which
            # must be joined first (bwrap's child may sit in a nested one by now).
            argv.append(f"--userns-path=/proc/self/fd/{owner}")
        argv += ["--netns-type=path", f"/proc/self/fd/{netns}", TAP]
        try:
            self._process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                pass_fds=(ready_w, exit_r, netns, owner))
        finally:
            _close(ready_w, exit_r, owner)
        try:
            ready = _read_until(ready_r, lambda data: data == b"1", deadline)
        finally:
            _close(ready_r)
        if ready != b"1":
            try:
                code = self._process.wait(timeout=5)  # it closed the pipe: it is exiting
            except subprocess.TimeoutExpired:
                code = None
            raise OSError(f"slirp4netns could not attach the network (exit status {code})")

    def stop(self) -> None:
        """End slirp4netns (closing its exit pipe) and every pipe still open."""
        self._drop(*list(self._fds))
        if self._process is not None:
            try:
                self._process.wait(timeout=HANDSHAKE_SECONDS)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
