"""A real, throw-away PostgreSQL server for the test suite.

`start_postgres(base_dir)` runs `initdb` in a fresh directory, starts `postgres` on
127.0.0.1 with a free port (unix socket inside that directory too) and waits until it
accepts connections. Durability is switched off (fsync, synchronous_commit,
full_page_writes) because a test cluster is thrown away anyway. `PgServer.stop()`
shuts down exactly the process this module started and removes the directory.

PostgreSQL refuses to run as root: under euid 0 the cluster belongs to the `postgres`
system user (or `nobody` when that does not exist) and every server process runs as
that user.

Binaries are looked up in `$GRIDGATE_PG_BINDIR`, `pg_config --bindir`, the highest
`/usr/lib/postgresql/*/bin`, then `PATH`. `tests/run.sh` installs them from apt when
none is found.

If `GRIDGATE_TEST_PG_URL` is set, the suite uses that server instead of starting
one (the choice is made in `tests/conftest.py`, not here).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import sql

SUPERUSER = "gridgate"
DEFAULT_DB = "gridgate_test"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
# sockaddr_un.sun_path is 108 bytes; postgres appends "/.s.PGSQL.<port>" (+ ".lock").
_MAX_SOCKET_DIR = 107 - len("/.s.PGSQL.65535.lock")


class PostgresUnavailable(RuntimeError):
    """PostgreSQL binaries are missing or the server did not come up."""


@dataclass
class PgServer:
    """A running test server; `url` points at a ready-made database `gridgate_test`."""

    host: str
    port: int
    user: str
    dbname: str
    pid: int
    root: Path
    _proc: subprocess.Popen[bytes] = field(repr=False)
    _extra_dirs: list[Path] = field(default_factory=list, repr=False)
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the default test database."""
        return self.url_for(self.dbname)

    @property
    def admin_url(self) -> str:
        """SQLAlchemy URL of the `postgres` maintenance database (superuser)."""
        return self.url_for("postgres")

    @property
    def log_path(self) -> Path:
        return self.root / "postgres.log"

    def url_for(self, dbname: str) -> str:
        """SQLAlchemy URL of database `dbname` on this server."""
        return f"postgresql+psycopg://{self.user}@{self.host}:{self.port}/{dbname}"

    def conninfo(self, dbname: str = "postgres") -> str:
        """libpq connection string (for psycopg directly)."""
        return f"host={self.host} port={self.port} user={self.user} dbname={dbname}"

    def create_database(self, name: str) -> str:
        """Create database `name` (owned by the superuser) and return its SQLAlchemy URL."""
        with psycopg.connect(self.conninfo(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        """Drop database `name`, disconnecting whoever still uses it."""
        with psycopg.connect(self.conninfo(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def stop(self) -> None:
        """Fast shutdown (SIGINT), SIGKILL after a deadline, then remove the directory."""
        if self._stopped:
            return
        self._stopped = True
        _terminate(self._proc)
        for path in [self.root, *self._extra_dirs]:
            shutil.rmtree(path, ignore_errors=True)


def find_bindir() -> Path:
    """Directory holding `initdb` and `postgres`, or PostgresUnavailable."""
    candidates: list[Path] = []
    override = os.environ.get("GRIDGATE_PG_BINDIR")
    if override:
        candidates.append(Path(override))
    pg_config = shutil.which("pg_config")
    if pg_config:
        # libpq-dev ships pg_config without the server, so check the binaries too.
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()
            if out:
                candidates.append(Path(out))
    versioned = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if p.parent.name.isdigit()]
    candidates += sorted(versioned, key=lambda p: int(p.parent.name), reverse=True)
    on_path = shutil.which("postgres")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for bindir in candidates:
        if all(os.access(bindir / exe, os.X_OK) for exe in ("initdb", "postgres")):
            return bindir
    raise PostgresUnavailable(
        "PostgreSQL server binaries (initdb, postgres) not found; run `bash tests/run.sh`, "
        "which installs them, or set GRIDGATE_PG_BINDIR"
    )


def start_postgres(base_dir: Path) -> PgServer:
    """Initialise and start a private PostgreSQL cluster under `base_dir`."""
    bindir = find_bindir()
    owner = _unprivileged_owner()
    base = Path(base_dir)
    base.mkdir(parents=True, exist_ok=True)
    if owner is not None and not _traversable_by_others(base):
        # The unprivileged owner could not reach a root-only directory such as
        # /tmp/pytest-of-root; the system temp dir is world-traversable.
        base = Path(tempfile.gettempdir())
    root = Path(tempfile.mkdtemp(prefix="gridgate-pg-", dir=base))
    extra: list[Path] = []
    try:
        sockdir = root / "sock"
        if len(str(sockdir)) > _MAX_SOCKET_DIR:
            sockdir = Path(tempfile.mkdtemp(prefix="gg-pgs-"))
            extra.append(sockdir)
        sockdir.mkdir(exist_ok=True)
        if owner is not None:
            for path in (root, sockdir):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        _initdb(bindir, root / "data", owner)
        proc, port = _start_server(bindir, root, sockdir, owner)
    except BaseException:
        for path in [root, *extra]:
            shutil.rmtree(path, ignore_errors=True)
        raise
    server = PgServer(
        host="127.0.0.1",
        port=port,
        user=SUPERUSER,
        dbname=DEFAULT_DB,
        pid=proc.pid,
        root=root,
        _proc=proc,
        _extra_dirs=extra,
    )
    # A session that forgets to stop the server (or dies on an exception) still cleans up.
    atexit.register(server.stop)
    try:
        server.create_database(DEFAULT_DB)
    except BaseException:
        server.stop()
        raise
    return server


def _unprivileged_owner() -> pwd.struct_passwd | None:
    """The account to run PostgreSQL as when we are root; None when we are not."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresUnavailable("running as root and neither `postgres` nor `nobody` exists")


def _traversable_by_others(path: Path) -> bool:
    current = path.resolve()
    return all(part.stat().st_mode & stat.S_IXOTH for part in [current, *current.parents])


def _child_env() -> dict[str, str]:
    # Inherited PG* variables (PGHOST, PGDATA, ...) would silently redirect the tools.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    return env


def _uid(owner: pwd.struct_passwd | None) -> int | None:
    return None if owner is None else owner.pw_uid


def _gid(owner: pwd.struct_passwd | None) -> int | None:
    return None if owner is None else owner.pw_gid


def _groups(owner: pwd.struct_passwd | None) -> list[int] | None:
    # Drop root's supplementary groups along with its uid.
    return None if owner is None else []


def _initdb(bindir: Path, datadir: Path, owner: pwd.struct_passwd | None) -> None:
    argv = [
        str(bindir / "initdb"),
        "-D",
        str(datadir),
        "-U",
        SUPERUSER,
        "--auth=trust",
        "--encoding=UTF8",
        "--no-locale",
        "--no-sync",
    ]
    result = subprocess.run(
        argv,
        cwd=datadir.parent,
        env=_child_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        user=_uid(owner),
        group=_gid(owner),
        extra_groups=_groups(owner),
    )
    if result.returncode != 0:
        raise PostgresUnavailable(f"initdb failed ({result.returncode}):\n{result.stderr}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _start_server(
    bindir: Path, root: Path, sockdir: Path, owner: pwd.struct_passwd | None
) -> tuple[subprocess.Popen[bytes], int]:
    """Start postgres, retrying with another port if the free one was taken meanwhile."""
    log_path = root / "postgres.log"
    last_error = ""
    for _attempt in range(3):
        port = _free_port()
        argv = [
            str(bindir / "postgres"),
            "-D",
            str(root / "data"),
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-k",
            str(sockdir),
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=300",
            "-c",
            "logging_collector=off",
            "-c",
            "TimeZone=UTC",
        ]
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                argv,
                cwd=root,
                env=_child_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Own process group: a Ctrl-C aimed at pytest does not hit the server
                # mid-test, and stop() can reap stragglers by group id.
                process_group=0,
                preexec_fn=_die_with_parent(),
                user=_uid(owner),
        group=_gid(owner),
        extra_groups=_groups(owner),
            )
        try:
            _wait_ready(proc, port, log_path)
        except PostgresUnavailable as exc:
            _terminate(proc)
            last_error = str(exc)
            if "could not bind" in last_error or "Address already in use" in last_error:
                continue
            raise
        return proc, port
    raise PostgresUnavailable(last_error)


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec hook so the server quits if the test process is killed outright."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    # SIGQUIT is postgres' immediate shutdown; nobody is left to ask for a clean one.
    # Runs after the uid switch, which would otherwise clear the setting.
    return lambda: prctl(pr_set_pdeathsig, int(signal.SIGQUIT))


def _wait_ready(proc: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    conninfo = f"host=127.0.0.1 port={port} user={SUPERUSER} dbname=postgres"
    while True:
        if proc.poll() is not None:
            raise PostgresUnavailable(
                f"postgres exited with {proc.returncode}:\n{_tail(log_path)}"
            )
        try:
            with psycopg.connect(conninfo, connect_timeout=2):
                return
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise PostgresUnavailable(
                    f"postgres not ready after {START_TIMEOUT:.0f}s: {exc}\n{_tail(log_path)}"
                ) from exc
        time.sleep(0.05)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT (fast shutdown), then SIGKILL to the process group after STOP_TIMEOUT."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            # Still unreaped, so the group id is ours: take the backends down too.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT)


__all__ = ["PgServer", "PostgresUnavailable", "find_bindir", "start_postgres"]
