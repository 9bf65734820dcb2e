"""The CLI's stored login: one JSON file, readable by its owner only.

`credentials.json` lives in `GRIDGATE_CONFIG_DIR`, else platformdirs'
`user_config_dir("gridgate")`. It is created with mode 0600 inside a 0700 directory
and replaced atomically, so a crash never leaves half a token behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import platformdirs

from gateway.client.errors import AuthenticationRequired, SessionExpired
from gateway.client.oauth import AuthorizationServer, OAuthError, TokenResponse
from gateway.client.urls import login_command, normalize_url

__all__ = ["CONFIG_DIR_ENV", "CredentialStore", "Credentials", "StoredTokenProvider",
           "config_dir", "credentials_path", "normalize_url", "remembered_gateway"]

CONFIG_DIR_ENV = "GRIDGATE_CONFIG_DIR"
# Refresh this long before expiry, so a token never dies in flight.
REFRESH_MARGIN_SECONDS = 60.0


def config_dir() -> Path:
    """Where the CLI keeps its configuration and credentials."""
    override = os.environ.get(CONFIG_DIR_ENV)
    return Path(override) if override else Path(platformdirs.user_config_dir("gridgate"))


def credentials_path() -> Path:
    return config_dir() / "credentials.json"


@dataclass(frozen=True)
class Credentials:
    """A login at one gateway. `expires_at` is a Unix time (None: unknown)."""

    gateway: str
    access_token: str
    refresh_token: str | None
    expires_at: float | None
    client_id: str
    token_endpoint: str

    @classmethod
    def from_token(cls, gateway: str, token: TokenResponse, client_id: str,
                   token_endpoint: str) -> Credentials:
        return cls(gateway=normalize_url(gateway), access_token=token.access_token,
                   refresh_token=token.refresh_token, expires_at=token.expires_at,
                   client_id=client_id, token_endpoint=token_endpoint)

    def expires_soon(self, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return (now if now is not None else time.time()) >= self.expires_at - REFRESH_MARGIN_SECONDS

    def refreshed(self, token: TokenResponse) -> Credentials:
        """These credentials after a refresh (the server may or may not rotate the token)."""
        return replace(self, access_token=token.access_token,
                       refresh_token=token.refresh_token or self.refresh_token,
                       expires_at=token.expires_at)


class CredentialStore:
    """Load, save and delete `credentials.json` (0600)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or credentials_path()

    def load(self, gateway: str | None = None) -> Credentials | None:
        """The stored login; None when there is none. `gateway` names the server in the
        hint when the file is unreadable."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data: dict[str, Any] = json.loads(text)
            return Credentials(
                gateway=str(data["gateway"]), access_token=str(data["access_token"]),
                refresh_token=data.get("refresh_token"),
                expires_at=float(data["expires_at"]) if data.get("expires_at") else None,
                client_id=str(data["client_id"]), token_endpoint=str(data["token_endpoint"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            hint = login_command(gateway) if gateway else "gridgate login"
            raise AuthenticationRequired(
                f"The credentials file {self.path} is unreadable ({exc}); run '{hint}'."
            ) from exc

    def save(self, creds: Credentials) -> None:
        """Write atomically: a new 0600 file renamed over the old one."""
        self._ensure_dir()
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(asdict(creds), fh, indent=2)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise

    def delete(self) -> bool:
        """Remove the file; False when there was none."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold an exclusive lock while refreshing, so two CLI processes never present
        the same (rotating) refresh token: the server would see a replay and revoke both."""
        self._ensure_dir()
        fd = os.open(self.path.with_name(".credentials.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _ensure_dir(self) -> None:
        directory = self.path.parent
        if not directory.exists():
            directory.mkdir(parents=True, mode=0o700)
            os.chmod(directory, 0o700)  # mkdir's mode is filtered by the umask


class StoredTokenProvider:
    """A token provider for `GatewayClient` backed by the credentials file.

    Returns a valid access token, refreshing it first when it is about to expire.
    Refuses to hand a token for one gateway to another.
    """

    def __init__(self, gateway_url: str, store: CredentialStore | None = None,
                 server: AuthorizationServer | None = None) -> None:
        self.gateway_url = normalize_url(gateway_url)
        self.store = store or CredentialStore()
        self._server = server

    def __call__(self) -> str:
        creds = self._load()
        if not creds.expires_soon():
            return creds.access_token
        with self.store.locked():
            # Another process may have refreshed while we waited for the lock.
            creds = self._load()
            if not creds.expires_soon():
                return creds.access_token
            if not creds.refresh_token:
                raise self._expired()
            server = self._server or AuthorizationServer(self.gateway_url)
            try:
                token = server.refresh(creds.refresh_token, creds.client_id,
                                       creds.token_endpoint)
            except OAuthError as exc:
                if exc.error in ("invalid_grant", "invalid_client", "unauthorized_client"):
                    raise self._expired() from exc
                raise
            finally:
                if self._server is None:
                    server.close()
            fresh = creds.refreshed(token)
            self.store.save(fresh)
            return fresh.access_token

    def _expired(self) -> SessionExpired:
        return SessionExpired(
            f"Your session has expired; run '{login_command(self.gateway_url)}'.")

    def _load(self) -> Credentials:
        creds = self.store.load(self.gateway_url)
        if creds is None:
            raise AuthenticationRequired(f"You are not logged in to {self.gateway_url}; run "
                                         f"'{login_command(self.gateway_url)}'.")
        if creds.gateway != self.gateway_url:
            # Only an explicit --gateway or GRIDGATE_URL gets here: without either, the CLI
            # uses the gateway of the stored login.
            raise AuthenticationRequired(
                f"You are logged in to {creds.gateway}, not {self.gateway_url}: run "
                f"'{login_command(self.gateway_url)}' to log in there, or leave out "
                f"--gateway and GRIDGATE_URL to use {creds.gateway}."
            )
        return creds


def remembered_gateway(store: CredentialStore | None = None) -> str | None:
    """The gateway of the stored login, which commands use when given none; None when
    there is no readable login."""
    try:
        creds = (store or CredentialStore()).load()
    except AuthenticationRequired:
        return None  # the token provider says what is wrong with the file, and the fix
    return creds.gateway if creds is not None else None
