"""A real OpenSSH sshd for tests: 127.0.0.1, a free port, its own host key, config and log.

    server = start_sshd()            # as root; installs openssh-server if missing
    server.run_ssh(["id", "-u"])     # the OpenSSH client, StrictHostKeyChecking=yes
    server.stop(); server.start()    # same port, same host key
    server.cleanup()

Logins are by key only (`UsePAM no`), for the system user `gwtest` (created if missing,
with a `*` password field: a `!` one cannot log in by key without PAM). Stopping kills the
listener and every process under it (connections, sessions, their commands), all by the
PIDs found under the listener this helper started.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
TEST_USER = "gwtest"
START_TIMEOUT = 15.0


def ensure_openssh() -> None:
    """Install openssh-server/-client from apt when missing, without starting any service."""
    if os.path.exists(SSHD) and shutil.which("ssh") and shutil.which("ssh-keygen"):
        return
    policy = Path("/usr/sbin/policy-rc.d")
    created = False
    if not policy.exists():
        # Packages must not start the system's sshd on port 22.
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
        created = True
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
             "openssh-server", "openssh-client"],
            check=True, env=env, stdout=subprocess.DEVNULL,
        )
    finally:
        if created:
            policy.unlink()


def ensure_user(name: str = TEST_USER) -> pwd.struct_passwd:
    """A system user that can log in by key only (password field `*`), home under /home."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        done = subprocess.run(
            ["useradd", "--create-home", "--home-dir", f"/home/{name}", "--shell", "/bin/bash",
             name],
            capture_output=True, text=True,
        )
        # 9: created meanwhile by a parallel run.
        if done.returncode not in (0, 9):
            raise RuntimeError(f"useradd {name} failed: {done.stderr.strip()}") from None
        entry = pwd.getpwnam(name)
    if _shadow_password(name) != "*":
        subprocess.run(["usermod", "-p", "*", name], check=True)
    return entry


def _shadow_password(name: str) -> str | None:
    with open("/etc/shadow", encoding="utf-8") as shadow:
        for line in shadow:
            fields = line.rstrip("\n").split(":")
            if fields[0] == name:
                return fields[1]
    return None


def keygen(path: Path, comment: str = "gridgate-test") -> str:
    """A new ed25519 key pair at `path` (+ .pub); returns the public line 'ssh-ed25519 AAAA...'."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True, stdin=subprocess.DEVNULL,
    )
    return public_line(path)


def public_line(private_key: Path) -> str:
    """'TYPE BASE64' of a key pair (no comment)."""
    fields = Path(f"{private_key}.pub").read_text().split()
    return f"{fields[0]} {fields[1]}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children() -> dict[int, list[int]]:
    """ppid -> pids, from /proc."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                text = stat.read()
        except OSError:
            continue
        # The command name is in parentheses and may contain anything: split after it.
        ppid = int(text[text.rindex(")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def descendants(pid: int) -> list[int]:
    tree = _children()
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@dataclass
class Sshd:
    """One sshd instance and its files (all under `root`)."""

    root: Path
    port: int
    user: str
    host_key: Path
    client_key: Path
    extra_config: list[str] = field(default_factory=list)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def host_key_line(self) -> str:
        return public_line(self.host_key)

    @property
    def client_key_line(self) -> str:
        return public_line(self.client_key)

    @property
    def log_path(self) -> Path:
        return self.root / "sshd.log"

    @property
    def config_path(self) -> Path:
        return self.root / "sshd_config"

    @property
    def known_hosts(self) -> Path:
        """An OpenSSH known_hosts file pinning this server's key."""
        path = self.root / "known_hosts"
        path.write_text(f"[127.0.0.1]:{self.port} {self.host_key_line}\n")
        return path

    def authorize(self, public: str) -> None:
        with open(self.root / "authorized_keys", "a", encoding="ascii") as keys:
            keys.write(public + "\n")

    def write_config(self) -> None:
        # sshd takes the first value of a keyword: extra lines come first to override.
        lines = [
            *self.extra_config,
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            "AddressFamily inet",
            f"HostKey {self.host_key}",
            f"PidFile {self.root / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
            "UsePAM no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin no",
            "StrictModes no",
            "MaxStartups 100",
            "MaxSessions 100",
            "LogLevel VERBOSE",
            "UseDNS no",
            "PrintMotd no",
            "X11Forwarding no",
            "AllowTcpForwarding yes",
            "Subsystem sftp internal-sftp",
            f"AllowUsers {self.user}",
        ]
        self.config_path.write_text("\n".join(lines) + "\n")

    def start(self) -> None:
        """Start (or restart) on the same port; returns once it accepts connections."""
        if self.running:
            return
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
        self.write_config()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config_path)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            )
        end = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"sshd exited with {self.proc.returncode}:\n{self.log()[-2000:]}"
                )
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", self.port), timeout=1.0
            ):
                return
            if time.monotonic() > end:
                self.stop()
                raise RuntimeError(f"sshd did not listen on {self.port}:\n{self.log()[-2000:]}")
            time.sleep(0.02)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Kill the listener, then every connection and session process it had started."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            below = descendants(proc.pid)
            proc.kill()
            for pid in below:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        proc.wait()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def count(self, text: str) -> int:
        """How many log lines contain `text`."""
        return sum(text in line for line in self.log().splitlines())

    def ssh_options(self) -> list[str]:
        """OpenSSH client options for this server: its pinned host key, our client key."""
        return [
            "-F", "/dev/null", "-p", str(self.port), "-i", str(self.client_key),
            "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={self.known_hosts}",
            "-o", "GlobalKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
        ]

    @property
    def destination(self) -> str:
        return f"{self.user}@127.0.0.1"

    def ssh_argv(self, *remote: str) -> list[str]:
        """The OpenSSH client command running `remote` on this server."""
        return ["ssh", *self.ssh_options(), self.destination, "--", *remote]


def start_sshd(user: str = TEST_USER, extra_config: list[str] | None = None, *,
               login: bool = True) -> Sshd:
    """A running sshd for `user`, who may log in with the returned `client_key`.

    `login=False`: `user` is not created, for tests that stop before logging in (at the
    host key): nobody can log in then, unless `user` happens to exist.
    """
    if os.geteuid() != 0:
        raise RuntimeError("starting a test sshd needs root (it logs users in)")
    ensure_openssh()
    if login:
        ensure_user(user)
    # Not pytest's tmp dir: that is 0700 root, and sshd reads authorized_keys as the user.
    root = Path(tempfile.mkdtemp(prefix="gw-sshd-"))
    root.chmod(0o755)
    try:
        host_key = root / "ssh_host_ed25519_key"
        keygen(host_key, "gridgate-test-host")
        client_key = root / "client_ed25519"
        keygen(client_key)
        for attempt in range(5):
            server = Sshd(root, free_port(), user, host_key, client_key, list(extra_config or []))
            (root / "authorized_keys").write_text(server.client_key_line + "\n")
            try:
                server.start()
                return server
            except RuntimeError:
                # The free port may have been taken in between; try another one.
                if attempt == 4 or "Address already in use" not in server.log():
                    raise
                server.log_path.unlink()
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    raise AssertionError("unreachable")
