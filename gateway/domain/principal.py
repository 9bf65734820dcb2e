"""Who is calling: the authenticated identity every service call carries."""

from __future__ import annotations

from dataclasses import dataclass, field

ROLES = ("researcher", "site-admin", "auditor", "admin")
SCOPES = ("jobs:read", "jobs:write", "sites:read", "sites:admin", "admin")


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. `user_id` is the gateway's own user row."""

    user_id: str
    issuer: str
    subject: str
    username: str | None = None
    scopes: frozenset[str] = field(default_factory=frozenset)
    roles: frozenset[str] = field(default_factory=frozenset)
    # The user row's unique gateway username, nothing else: mapped sites key accounts on
    # it (`username` above may fall back to a self-chosen display name).
    account_name: str | None = None

    @property
    def display(self) -> str:
        """A short name for events and logs."""
        return self.username or self.subject

    def has_role(self, role: str) -> bool:
        return role in self.roles or "admin" in self.roles
