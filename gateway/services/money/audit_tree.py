"""The audit log's tree as a service: the sequencer's step (take the waiting entries in and
sign the new head with the gateway's key, the one its tokens are signed with, published at
/.well-known/jwks.json), checking a head's signature, and the heads and proofs auditors
read."""

from __future__ import annotations

import json
import logging
from datetime import datetime

from joserfc import jws
from joserfc.errors import JoseError
from sqlalchemy import Connection
from sqlalchemy.orm import Session, sessionmaker

from gateway.accounting.audit_entry import canonical_time
from gateway.auth.keys import ALGORITHM, SigningKeys
from gateway.db.engine import transaction
from gateway.domain.errors import Invalid, NotFound
from gateway.repositories.money import audit_tree
from gateway.repositories.money.audit_tree import Sign, TreeDamaged, TreeHead
from gateway.schemas.audit import TREE_HEAD_TYPE, TreeHeadOut

log = logging.getLogger(__name__)


def head_claims(size: int, root: str, at: datetime) -> dict[str, object]:
    """What a head's signature covers."""
    return {"size": size, "root": root, "at": canonical_time(at)}


def signer(keys: SigningKeys) -> Sign:
    """Signs tree heads with `keys`."""
    def sign(size: int, root: str, at: datetime) -> str:
        return keys.sign(head_claims(size, root, at), typ=TREE_HEAD_TYPE)
    return sign


def signed_by(keys: SigningKeys, head: TreeHead) -> bool:
    """Whether `head`'s signature is `keys`' over exactly its size, root and time."""
    try:
        obj = jws.deserialize_compact(head.signature, keys.public_key, algorithms=[ALGORITHM])
    except (JoseError, ValueError):
        return False
    if obj.headers().get("typ") != TREE_HEAD_TYPE:
        return False
    try:
        claims = json.loads(obj.payload or b"null")
    except ValueError:
        return False
    return bool(claims == head_claims(head.size, head.root, head.at))


def take_in(sessions: sessionmaker[Session], keys: SigningKeys, now: datetime,
            every: float) -> TreeHead | None:
    """One sequencer step in a transaction of its own: the entries waiting (up to a batch)
    taken into the tree and a new head signed with `keys`, unless the newest head is
    younger than `every` seconds. None when nothing was done; a damaged tree is logged,
    never grown."""
    try:
        with transaction(sessions) as session:
            return audit_tree.integrate(session.connection(), now, signer(keys), every=every)
    except TreeDamaged as exc:
        log.error("the audit log's tree is not grown: %s", exc)
        return None


def head_out(head: TreeHead) -> TreeHeadOut:
    """A signed head as documents show it."""
    return TreeHeadOut(size=head.size, at=head.at, root=head.root, signature=head.signature)


def head(conn: Connection, size: int | None) -> TreeHeadOut:
    """The signed head of `size` leaves (None: the newest)."""
    found = audit_tree.latest_head(conn) if size is None else audit_tree.head_of_size(conn,
                                                                                      size)
    if found is None:
        raise NotFound("The audit log has no signed tree head yet." if size is None else
                       f"The audit log has no signed tree head of size {size}.")
    return head_out(found)


def consistency(conn: Connection, first: int, second: int) -> list[str]:
    """The proof that the signed tree of `first` leaves is a prefix of the signed tree of
    `second` (both must be heads the gateway signed)."""
    if not 0 < first <= second:
        raise Invalid(f"A consistency proof goes from a smaller tree to a larger "
                               f"one, both of at least one leaf: not from {first} to "
                               f"{second}.")
    head(conn, first)
    head(conn, second)
    return audit_tree.consistency(conn, first, second)
