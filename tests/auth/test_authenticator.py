"""Authenticator: token -> Principal, just-in-time users, a cache, disabled users and
revoked tokens refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select

from gateway.auth.accounts import create_local_user
from gateway.auth.authenticator import Authenticator
from gateway.auth.tokens import issue_access_token
from gateway.db.engine import transaction
from gateway.db.models import Membership, Project, RevokedAccessToken, User
from gateway.domain.errors import Unauthenticated
from tests.auth.conftest import AuthRuntime, external, make_auth_runtime
from tests.auth.jwks_server import JwksServer, serve_jwks
from tests.auth.tokens_util import claims, public_jwk, rsa_key, sign

EXT = "https://idp.example.org"


def local_user(rt: AuthRuntime, name: str = "alice") -> str:
    with transaction(rt.sessions) as session:
        return create_local_user(session, name, "correct horse battery").id


def token_for(rt: AuthRuntime, user_id: str, scope: str = "jobs:read jobs:write") -> str:
    return issue_access_token(rt.settings, rt.keys, subject=user_id, client_id="gridgate-cli",
                              scope=scope, username="alice").token


class Clock:
    def __init__(self) -> None:
        import time

        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def count_queries(rt: AuthRuntime) -> list[str]:
    seen: list[str] = []

    @event.listens_for(rt.engine, "before_cursor_execute")
    def _count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    return seen


def test_local_user_token_gives_a_principal(auth: AuthRuntime) -> None:
    user_id = local_user(auth)
    principal = auth.authenticator.authenticate(token_for(auth, user_id))
    assert principal.user_id == user_id and principal.username == "alice"
    assert principal.issuer == "local" and principal.subject == user_id
    assert principal.scopes == {"jobs:read", "jobs:write"}
    assert principal.roles == {"researcher"}


def test_repeat_costs_no_verification_and_no_query(auth: AuthRuntime) -> None:
    token = token_for(auth, local_user(auth))
    first = auth.authenticator.authenticate(token)
    queries = count_queries(auth)
    verifications: list[str] = []
    real_verify = auth.authenticator.verifier.verify

    def counting_verify(t: str) -> Any:
        verifications.append(t)
        return real_verify(t)

    auth.authenticator.verifier.verify = counting_verify  # type: ignore[method-assign]
    for _ in range(5):
        assert auth.authenticator.authenticate(token) is first
    assert verifications == [] and queries == []


def test_disabled_user_is_refused_within_the_cache_lifetime(
        tmp_path: Path, database_url: str) -> None:
    rt = make_auth_runtime(tmp_path, database_url)
    clock = Clock()
    authn = Authenticator(rt.settings, rt.sessions, rt.keys, clock=clock,
                          max_cache_seconds=30)
    try:
        user_id = local_user(rt)
        token = token_for(rt, user_id)
        authn.authenticate(token)
        with transaction(rt.sessions) as session:
            user = session.get(User, user_id)
            assert user is not None
            user.disabled = True
        assert authn.authenticate(token).user_id == user_id  # still cached
        clock.now += 31
        with pytest.raises(Unauthenticated, match="disabled"):
            authn.authenticate(token)
    finally:
        rt.close()


def test_a_revoked_token_is_refused_by_every_process(tmp_path: Path, database_url: str
                                                     ) -> None:
    rt = make_auth_runtime(tmp_path, database_url)
    clock = Clock()
    here, there, later = (Authenticator(rt.settings, rt.sessions, rt.keys, clock=clock,
                                        max_cache_seconds=30) for _ in range(3))
    try:
        user_id = local_user(rt)
        token, other = token_for(rt, user_id), token_for(rt, user_id, scope="jobs:read")
        here.authenticate(token)
        there.authenticate(token)  # another server process, which has it cached
        here.revoke(token)
        with pytest.raises(Unauthenticated, match="revoked"):
            here.authenticate(token)
        with pytest.raises(Unauthenticated, match="revoked"):
            later.authenticate(token)  # a process that had not seen it yet
        assert there.authenticate(token).user_id == user_id  # still cached
        clock.now += 31
        with pytest.raises(Unauthenticated, match="revoked"):
            there.authenticate(token)
        assert here.authenticate(other).user_id == user_id  # only that token
        here.revoke(token)  # twice (a double click) and a token that is none: no error
        here.revoke("not-a-token")
        # Once the revoked token would have expired anyway, its row goes at the next one.
        clock.now += rt.settings.access_token_ttl_seconds + rt.settings.token_leeway_seconds
        fresh = issue_access_token(rt.settings, rt.keys, subject=user_id,
                                   client_id="gridgate-cli", scope="jobs:read",
                                   now=clock.now).token
        here.revoke(fresh)
        with transaction(rt.sessions) as session:
            assert len(session.scalars(select(RevokedAccessToken)).all()) == 1
    finally:
        for authn in (here, there, later):
            authn.close()
        rt.close()


def test_cache_is_bounded(tmp_path: Path, database_url: str) -> None:
    rt = make_auth_runtime(tmp_path, database_url)
    authn = Authenticator(rt.settings, rt.sessions, rt.keys, cache_size=3)
    try:
        user_id = local_user(rt)
        for i in range(10):
            authn.authenticate(token_for(rt, user_id, scope=f"jobs:read s{i}"))
        assert len(authn._cache) == 3
    finally:
        rt.close()


def test_token_for_a_user_that_does_not_exist_is_refused(auth: AuthRuntime) -> None:
    with pytest.raises(Unauthenticated, match="no longer exists"):
        auth.authenticator.authenticate(token_for(auth, "00000000-0000-0000-0000-000000000000"))


def test_expired_token_says_to_log_in_again(auth: AuthRuntime) -> None:
    token = issue_access_token(auth.settings, auth.keys, subject=local_user(auth),
                               client_id="gridgate-cli", scope="jobs:read",
                               now=1_000_000_000).token
    with pytest.raises(Unauthenticated) as caught:
        auth.authenticator.authenticate(token)
    assert caught.value.detail == ("The access token has expired; run 'gridgate login' "
                                   "again.")


@pytest.fixture
def idp() -> Iterator[tuple[JwksServer, Any]]:
    key = rsa_key("idp-1")
    with serve_jwks({"keys": [public_jwk(key)]}) as server:
        yield server, key


def test_external_user_is_created_just_in_time(
        tmp_path: Path, database_url: str, idp: tuple[JwksServer, Any]) -> None:
    server, key = idp
    rt = make_auth_runtime(tmp_path, database_url,
                           external_issuers=[external(EXT, server.url)])
    try:
        token = sign(key, claims(EXT, sub="f:9a1b2c3d4e5f6a7b", preferred_username="erin",
                                 name="Erin"))
        principal = rt.authenticator.authenticate(token)
        assert principal.issuer == EXT and principal.subject == "f:9a1b2c3d4e5f6a7b"
        assert principal.roles == {"researcher"} and principal.username == "erin"
        rt.authenticator.forget()
        again = rt.authenticator.authenticate(sign(key, claims(EXT, sub="f:9a1b2c3d4e5f6a7b")))
        assert again.user_id == principal.user_id
        with transaction(rt.sessions) as session:
            users = session.scalars(select(User).where(User.issuer == EXT)).all()
            assert [u.id for u in users] == [principal.user_id]
            project = session.scalar(select(Project).where(
                Project.personal_owner_id == principal.user_id))
            assert project is not None and project.name == "~erin"
            assert session.get(Membership, (project.id, principal.user_id)) is not None
    finally:
        rt.close()


def test_external_user_keeps_the_address_its_provider_verified(
        tmp_path: Path, database_url: str, idp: tuple[JwksServer, Any]) -> None:
    server, key = idp
    rt = make_auth_runtime(tmp_path, database_url,
                           external_issuers=[external(EXT, server.url)])

    def email_after(**extra: Any) -> str | None:
        rt.authenticator.forget()
        principal = rt.authenticator.authenticate(sign(key, claims(EXT, sub="f:mail", **extra)))
        with transaction(rt.sessions) as session:
            user = session.get(User, principal.user_id)
            assert user is not None
            return user.email

    try:
        # Unverified, or not one plain address (a header's worth of text): not taken.
        assert email_after(email="erin@example.org") is None
        assert email_after(email="erin@example.org", email_verified="true") is None
        assert email_after(email="erin@example.org\r\nBcc: x@y.org", email_verified=True) is None
        assert email_after(email="erin@example.org", email_verified=True) == "erin@example.org"
        # The provider's current address replaces it; a token without one keeps it.
        assert email_after(email="erin@uni.example", email_verified=True) == "erin@uni.example"
        assert email_after() == "erin@uni.example"
    finally:
        rt.close()
