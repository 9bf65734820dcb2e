"""Accounts: just-in-time users with personal projects, local users, OAuth clients."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from gateway.auth import accounts
from gateway.db.engine import transaction
from gateway.db.models import Membership, OAuthClient, Project, User
from gateway.domain.errors import Conflict, Invalid
from tests.auth.conftest import AuthRuntime


def test_ensure_user_creates_once_with_a_personal_project(auth: AuthRuntime) -> None:
    with transaction(auth.sessions) as session:
        user = accounts.ensure_user(session, "https://idp.example", "abc-123-def-456-xyz",
                                    username="erin", display_name="Erin Example")
        again = accounts.ensure_user(session, "https://idp.example", "abc-123-def-456-xyz")
        assert again.id == user.id
        project = session.scalar(select(Project).where(Project.personal_owner_id == user.id))
        assert project is not None and project.name == "~erin"
        membership = session.get(Membership, (project.id, user.id))
        assert membership is not None and membership.role == "manager"
        assert user.roles == ["researcher"] and user.display_name == "Erin Example"


def test_same_subject_at_another_issuer_is_another_user(auth: AuthRuntime) -> None:
    with transaction(auth.sessions) as session:
        a = accounts.ensure_user(session, "https://a.example", "0123456789abcdef")
        b = accounts.ensure_user(session, "https://b.example", "0123456789abcdef")
        assert a.id != b.id
        names = set(session.scalars(select(Project.name).where(
            Project.personal_owner_id.in_([a.id, b.id]))))
        # Both projects are named after the first 12 characters; the second one is suffixed.
        assert names == {"~0123456789ab", "~0123456789ab-2"}


def test_external_username_does_not_take_a_local_users_name(auth: AuthRuntime) -> None:
    with transaction(auth.sessions) as session:
        local = accounts.create_local_user(session, "alice", "correct horse battery")
        ext = accounts.ensure_user(session, "https://idp.example", "s-1", username="alice")
        assert ext.username is None and local.username == "alice"


def test_create_local_user_and_verify_password(auth: AuthRuntime) -> None:
    with transaction(auth.sessions) as session:
        user = accounts.create_local_user(session, "bob", "correct horse battery",
                                          roles=("researcher", "auditor"))
        assert user.issuer == "local" and user.subject == user.id
        assert user.password_hash and user.password_hash.startswith("$argon2id$")
        assert "correct horse" not in user.password_hash
        assert user.roles == ["researcher", "auditor"]
    with transaction(auth.sessions) as session:
        found = accounts.verify_password(session, "bob", "correct horse battery")
        assert found is not None and found.id == user.id
        assert accounts.verify_password(session, "bob", "wrong password!") is None
        assert accounts.verify_password(session, "nobody", "correct horse battery") is None


def test_create_local_user_rejects_bad_input(auth: AuthRuntime) -> None:
    with transaction(auth.sessions) as session:
        accounts.create_local_user(session, "carol", "correct horse battery")
        with pytest.raises(Conflict):
            accounts.create_local_user(session, "carol", "another password")
        for name in ("Carol!", "", "x" * 40, "../etc", "a b", "carol2\n"):
            with pytest.raises(Invalid):
                accounts.create_local_user(session, name, "correct horse battery")
        with pytest.raises(Invalid):
            accounts.create_local_user(session, "dave", "short")
        with pytest.raises(Invalid):
            accounts.create_local_user(session, "dave", "correct horse battery",
                                       roles=("superuser",))


def test_create_client_returns_the_secret_once_and_stores_a_hash(auth: AuthRuntime) -> None:
    with transaction(auth.sessions) as session:
        client, secret = accounts.create_client(
            session, "nightly", ["jobs:read", "jobs:write"], ["client_credentials"], None)
        assert secret and len(secret) >= 32
        assert client.secret_hash and client.secret_hash.startswith("$argon2id$")
        assert secret not in client.secret_hash
        assert accounts.check_secret(client.secret_hash, secret)
        assert not accounts.check_secret(client.secret_hash, secret + "x")
        # Without a user to act as, the client gets its own service user.
        service = session.get(User, client.user_id)
        assert service is not None and service.password_hash is None
        with pytest.raises(Invalid):
            accounts.create_client(session, "bad", ["root"], ["client_credentials"], None)
        with pytest.raises(Invalid):
            accounts.create_client(session, "bad", ["jobs:read"], ["password"], None)


def test_ensure_cli_client_is_public_and_idempotent(auth: AuthRuntime) -> None:
    with transaction(auth.sessions) as session:
        first = accounts.ensure_cli_client(session)
        second = accounts.ensure_cli_client(session)
        assert first is second and first.client_id == "gridgate-cli"
        assert first.secret_hash is None
        assert set(first.grant_types) == {accounts.DEVICE_CODE_GRANT, "refresh_token"}
        assert set(first.scopes) == {"jobs:read", "jobs:write", "sites:read"}
    with transaction(auth.sessions) as session:
        assert session.scalars(select(OAuthClient)).all()[0].client_id == "gridgate-cli"
