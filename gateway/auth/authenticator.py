"""Bearer token -> Principal: verify, find (or create) the user, remember the answer.

The answer for a token is cached in a bounded LRU so that repeated requests with the
same token cost neither an RSA verification nor a database query. An entry lives until
the token expires but at most `max_cache_seconds` (30 s), which bounds how long a
disabled user can go on using a token they already hold, and how long another server
process can go on accepting a token revoked here (this process forgets it at once).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from gateway.auth import tokens
from gateway.auth.accounts import (
    DEFAULT_ROLES,
    LOCAL_ISSUER,
    ensure_user,
    find_user,
    get_user,
)
from gateway.auth.keys import SigningKeys
from gateway.auth.verify import TokenVerifier, VerifiedToken
from gateway.db.engine import transaction
from gateway.db.models import User
from gateway.domain.errors import Unauthenticated
from gateway.domain.principal import Principal
from gateway.settings import Settings


class Authenticator:
    """Turns an access token into the `Principal` every service call carries."""

    def __init__(
        self,
        settings: Settings,
        sessions: sessionmaker[Session],
        keys: SigningKeys,
        *,
        http: httpx.Client | None = None,
        cache_size: int = 10_000,
        max_cache_seconds: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._sessions = sessions
        self._clock = clock
        self.verifier = TokenVerifier(settings, keys, http=http, clock=clock)
        self._cache: OrderedDict[str, tuple[float, Principal]] = OrderedDict()
        self._cache_size = cache_size
        self._max_age = max_cache_seconds
        self._lock = threading.Lock()

    def cached(self, token: str) -> Principal | None:
        """The remembered answer for `token`, without I/O; None when it must be verified."""
        now = self._clock()
        with self._lock:
            hit = self._cache.get(token)
            if hit is not None:
                if hit[0] > now:
                    self._cache.move_to_end(token)
                    return hit[1]
                del self._cache[token]
        return None

    def authenticate(self, token: str) -> Principal:
        """The caller behind `token`, or `Unauthenticated` with a message a person can act on."""
        hit = self.cached(token)
        if hit is not None:
            return hit
        now = self._clock()
        verified = self.verifier.verify(token)
        principal = self._principal(verified)
        until = min(verified.expires_at, now + self._max_age)
        with self._lock:
            self._cache[token] = (until, principal)
            self._cache.move_to_end(token)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return principal

    def revoke(self, token: str) -> None:
        """Refuse `token` from now on (a sign-out). Only the built-in issuer's tokens are
        revoked here; a token that no longer verifies needs nothing."""
        try:
            verified = self.verifier.verify(token)
        except Unauthenticated:
            return
        if verified.builtin and verified.jti:
            # The verifier accepts a token up to the leeway past its `exp`.
            refused_after = verified.expires_at + self.settings.token_leeway_seconds
            with transaction(self._sessions) as session:
                tokens.revoke_access_token(session, verified.jti,
                                           datetime.fromtimestamp(refused_after, UTC),
                                           datetime.fromtimestamp(self._clock(), UTC))
        with self._lock:
            self._cache.pop(token, None)

    def close(self) -> None:
        """Release the JWKS HTTP client."""
        self.verifier.close()

    def forget(self) -> None:
        """Drop every cached answer (e.g. after disabling a user)."""
        with self._lock:
            self._cache.clear()

    def _principal(self, token: VerifiedToken) -> Principal:
        try:
            # Its own unit of work: a user seen for the first time is created here.
            with transaction(self._sessions) as session:
                if token.builtin and token.jti and tokens.access_token_revoked(session, token.jti):
                    raise Unauthenticated("This access token was revoked (signed out); sign in "
                                          "again, or run 'gridgate login'.")
                user = self._user(session, token)
        except IntegrityError:
            # Another request created the same user (or took the project name) first.
            with self._sessions() as session:
                found = find_user(session, token.issuer, token.subject)
            if found is None:
                raise
            user = found
        if user.disabled:
            raise Unauthenticated(
                f"The account {user.username or user.subject!r} is disabled; "
                "ask a gateway administrator."
            )
        return Principal(
            user_id=user.id,
            issuer=user.issuer,
            subject=user.subject,
            username=user.username or user.display_name,
            scopes=token.scopes,
            roles=frozenset(user.roles or DEFAULT_ROLES),
            account_name=user.username,
        )

    def _user(self, session: Session, token: VerifiedToken) -> User:
        if token.builtin:
            # Our own tokens carry the gateway user id as `sub`.
            user = get_user(session, token.subject)
            if user is None or user.issuer != LOCAL_ISSUER:
                raise Unauthenticated("The account this token was issued to no longer exists; "
                                      "run 'gridgate login' again.")
            return user
        user = ensure_user(session, token.issuer, token.subject,
                           username=token.username, display_name=token.display_name)
        if token.email is not None and user.email != token.email:
            # The provider's current verified address (job mail goes there by default).
            user.email = token.email
        return user
