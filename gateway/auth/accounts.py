"""Users, passwords and OAuth clients of the gateway. Services flush; the caller commits.

Identity is (issuer, subject). Local users (who log in with a password on the built-in
issuer's verification page) are stored with issuer `local` and subject = their user id;
the built-in issuer's tokens carry that id as `sub`.
"""

from __future__ import annotations

import re
import secrets
import uuid
from collections.abc import Iterable

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy.orm import Session

from gateway.db.models import OAuthClient, Project, User
from gateway.domain.errors import Conflict, Invalid, NotFound
from gateway.domain.principal import ROLES, SCOPES
from gateway.repositories.identity import clients, projects, users
from rules.text import TextRule

LOCAL_ISSUER = "local"
DEFAULT_ROLES = ("researcher",)
CLI_CLIENT_ID = "gridgate-cli"
CLI_SCOPES = ("jobs:read", "jobs:write", "sites:read")
DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
GRANT_TYPES = (DEVICE_CODE_GRANT, "client_credentials", "refresh_token")
USERNAME = TextRule("username", r"[a-z_][a-z0-9_.-]{0,31}",
                    "1-32 characters: lowercase letters, digits, '_', '.', '-', starting with "
                    "a letter or '_'")

_hasher = PasswordHasher()
# Verified against when the user does not exist, so a miss costs as much as a hit.
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))


def hash_secret(secret: str) -> str:
    """An argon2id hash of a password or client secret."""
    return _hasher.hash(secret)


def check_secret(secret_hash: str | None, secret: str) -> bool:
    """Whether `secret` matches `secret_hash` (always spends one argon2 verify)."""
    try:
        return _hasher.verify(secret_hash or _DUMMY_HASH, secret) and secret_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def _personal_project_name(session: Session, base: str) -> str:
    name = f"~{base}"[:60]
    candidate, n = name, 1
    while projects.name_taken(session, candidate):
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def _add_personal_project(session: Session, user: User, base: str) -> None:
    project = Project(name=_personal_project_name(session, base),
                      description=f"Personal project of {user.username or user.subject}",
                      personal_owner_id=user.id)
    projects.add(session, project)
    session.flush()
    projects.add_member(session, project.id, user.id, "manager")
    session.flush()


def find_user(session: Session, issuer: str, subject: str) -> User | None:
    """The user with this identity, if any."""
    return users.by_identity(session, issuer, subject)


def ensure_user(
    session: Session,
    issuer: str,
    subject: str,
    username: str | None = None,
    display_name: str | None = None,
) -> User:
    """The user for (issuer, subject), created just in time with a personal project.

    `username` is stored only while no other user holds it (usernames are unique and
    local users log in with theirs); it names the personal project either way.
    """
    user = find_user(session, issuer, subject)
    if user is not None:
        return user
    free = username is not None and users.id_by_username(session, username) is None
    user_id = str(uuid.uuid4())
    user = User(id=user_id, issuer=issuer, subject=subject,
                username=username if free else None,
                display_name=display_name or username, roles=list(DEFAULT_ROLES),
                disabled=False)
    users.add(session, user)
    session.flush()
    _add_personal_project(session, user, _project_base(username or subject[:12]))
    return user


def _project_base(text: str) -> str:
    # Project names are shown and typed by people; keep them to a safe alphabet.
    return re.sub(r"[^A-Za-z0-9_.-]", "-", text) or "user"


def _check_roles(roles: Iterable[str]) -> list[str]:
    out = list(dict.fromkeys(roles))
    unknown = [r for r in out if r not in ROLES]
    if unknown:
        raise Invalid(f"Unknown role(s) {', '.join(unknown)}; roles are {', '.join(ROLES)}.")
    return out


def create_local_user(
    session: Session, username: str, password: str, roles: Iterable[str] = DEFAULT_ROLES
) -> User:
    """A user who logs in to the built-in issuer with `username` and `password`."""
    if not USERNAME.matches(username):
        raise Invalid(f"A username is {USERNAME.hint}.", field="username")
    if len(password) < 8:
        raise Invalid("A password needs at least 8 characters.", field="password")
    if users.id_by_username(session, username) is not None:
        raise Conflict(f"A user named '{username}' already exists.")
    user_id = str(uuid.uuid4())
    user = User(id=user_id, issuer=LOCAL_ISSUER, subject=user_id, username=username,
                password_hash=hash_secret(password), display_name=username,
                roles=_check_roles(roles), disabled=False)
    users.add(session, user)
    session.flush()
    _add_personal_project(session, user, username)
    return user


def set_password(session: Session, user: User, password: str) -> None:
    """Replace a local user's password."""
    if len(password) < 8:
        raise Invalid("A password needs at least 8 characters.", field="password")
    user.password_hash = hash_secret(password)
    session.flush()


def verify_password(session: Session, username: str, password: str) -> User | None:
    """The local user if `password` is theirs, else None. Disabled users are returned:
    the caller decides what to tell them."""
    user = users.by_username(session, username, LOCAL_ISSUER)
    if not check_secret(user.password_hash if user else None, password):
        return None
    assert user is not None and user.password_hash is not None
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = hash_secret(password)
        session.flush()
    return user


def create_client(
    session: Session,
    name: str,
    scopes: Iterable[str],
    grant_types: Iterable[str],
    user_id: str | None = None,
    *,
    public: bool = False,
) -> tuple[OAuthClient, str | None]:
    """Register an OAuth client; returns it and its plaintext secret (shown once).

    A client-credentials client acts as `user_id`; without one it gets its own service
    user (no password, role researcher), so its jobs have an owner like anyone's.
    """
    scopes, grants = list(dict.fromkeys(scopes)), list(dict.fromkeys(grant_types))
    bad_scopes = [s for s in scopes if s not in SCOPES]
    if bad_scopes or not scopes:
        raise Invalid(f"Scopes must be some of {', '.join(SCOPES)}; got "
                      f"{', '.join(scopes) or 'none'}.", field="scopes")
    bad_grants = [g for g in grants if g not in GRANT_TYPES]
    if bad_grants or not grants:
        raise Invalid(f"Grant types must be some of {', '.join(GRANT_TYPES)}; got "
                      f"{', '.join(grants) or 'none'}.", field="grant_types")
    if public and "client_credentials" in grants:
        raise Invalid("A public client cannot use client_credentials.", field="grant_types")
    client_id = f"gg-{secrets.token_hex(8)}"
    if user_id is not None:
        if users.get(session, user_id) is None:
            raise NotFound(f"No user with id {user_id}.")
    elif "client_credentials" in grants:
        user_id = _service_user(session, client_id, name).id
    secret = None if public else secrets.token_urlsafe(32)
    client = OAuthClient(client_id=client_id, name=name, grant_types=grants, scopes=scopes,
                         secret_hash=hash_secret(secret) if secret else None, user_id=user_id)
    clients.add(session, client)
    session.flush()
    return client, secret


def _service_user(session: Session, client_id: str, name: str) -> User:
    user_id = str(uuid.uuid4())
    user = User(id=user_id, issuer=LOCAL_ISSUER, subject=user_id, username=None,
                display_name=f"client {name} ({client_id})", roles=list(DEFAULT_ROLES),
                disabled=False)
    users.add(session, user)
    session.flush()
    _add_personal_project(session, user, client_id)
    return user


def get_user(session: Session, user_id: str) -> User | None:
    """The user with this gateway id, if any."""
    return users.get(session, user_id)


def user_id_named(session: Session, username: str) -> str:
    """The id of the user holding `username`; NotFound when nobody does."""
    user_id = users.id_by_username(session, username)
    if user_id is None:
        raise NotFound(f"No local user named '{username}'.")
    return user_id


def get_client(session: Session, client_id: str) -> OAuthClient | None:
    """The registered OAuth client `client_id`, if any."""
    return clients.get(session, client_id)


def ensure_cli_client(session: Session) -> OAuthClient:
    """The pre-registered public client `gridgate-cli` (device code + refresh token)."""
    client = clients.get(session, CLI_CLIENT_ID)
    if client is None:
        client = OAuthClient(client_id=CLI_CLIENT_ID, name="gridgate command line",
                             secret_hash=None, grant_types=[DEVICE_CODE_GRANT, "refresh_token"],
                             scopes=list(CLI_SCOPES), user_id=None)
        clients.add(session, client)
        session.flush()
    return client
