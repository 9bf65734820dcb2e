"""The standing OpenSSH connection the bulk copies of one site account ride (ControlMaster).

    master = SshMaster(start_argv, control_path, label)
    master.ensure()          # start it unless it runs; True when it is ready now
    master.wait_ready(2.0)   # a copy that found it in its handshake waits for it
    master.stop()            # `ssh -O exit`: every session on it ends

The master is an `ssh -N` with ControlMaster=yes and ControlPersist=MASTER_IDLE_SECONDS:
once authenticated it forks into the background and serves sessions through its control
socket (in the bulk path's private directory), and it exits by itself when no session
has used it for that long, so a gateway that dies leaves no connection behind for longer.
It is ready when its socket accepts a connection; a socket that refuses one was left by
a master that was killed, and is removed before a new master starts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import subprocess
import threading
import time

log = logging.getLogger("adapters.ssh")

# A master no session has used for this long exits by itself (ControlPersist).
MASTER_IDLE_SECONDS = 600
_POLL = 0.005


class SshMaster:
    """One site account's master connection (see module). `start_argv` is the `ssh`
    command line up to the destination: ControlMaster=yes and the control path in it."""

    def __init__(self, start_argv: list[str], control_path: str, host: str,
                 label: str) -> None:
        self._argv = [*start_argv, "-o", f"ControlPersist={MASTER_IDLE_SECONDS}", "-N",
                      "--", host]
        self._host = host
        self.control_path, self.label = control_path, label
        self._lock = threading.Lock()
        # The `ssh` that authenticates, then forks the master off and exits.
        self._starting: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def ensure(self) -> bool:
        """Start the master unless it runs or is starting; whether it is ready now."""
        with self._lock:
            if self._starting is not None and self._starting.poll() is None:
                return False
            if self._accepts():
                return True
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.control_path)  # a killed master's
            try:
                starting = subprocess.Popen(
                    self._argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)
            except OSError as exc:
                log.info("no master connection to %s: %s", self.label, exc)
                return False
            self._starting = starting
            self.starts += 1
        threading.Thread(target=starting.wait, daemon=True, name="gridgate-ssh-master").start()
        return False

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for a master that is starting; whether it is
        ready (False at once when none is starting, or it failed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                starting = self._starting
                if self._accepts():
                    return True
            if starting is None or starting.poll() not in (None, 0):
                return False
            time.sleep(_POLL)
        return False

    def stop(self) -> None:
        """End the master and every session on it (or the one still starting)."""
        with self._lock:
            starting, self._starting = self._starting, None
            if starting is not None and starting.poll() is None:
                starting.kill()
            if os.path.exists(self.control_path):
                with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                    self._control("exit")
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.control_path)

    def started(self) -> bool:
        """Whether the last start succeeded: its `ssh` authenticated and forked the
        master off (true still after that master has exited)."""
        starting = self._starting
        return starting is not None and starting.poll() == 0

    def pid(self) -> int | None:
        """The running master's process id (`ssh -O check`), None when none runs."""
        if not os.path.exists(self.control_path):
            return None
        done = self._control("check")
        found = re.search(r"\(pid=(\d+)\)", done.stderr)
        return int(found[1]) if done.returncode == 0 and found else None

    def _control(self, command: str) -> subprocess.CompletedProcess[str]:
        """`ssh -O command` to the master through its socket."""
        return subprocess.run([self._argv[0], "-F", "none", "-S", self.control_path, "-O",
                               command, "--", self._host], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=10, check=False)

    def _accepts(self) -> bool:
        """Whether a master listens on the control socket (not a killed one's file)."""
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(self.control_path)
        except OSError:
            return False
        finally:
            probe.close()
        return True
