"""Binding the ledger into the audit log, pure: the canonical form of one ledger
transaction, its seal (the sha256 of that form, stored in the data of the audit link that
records the transaction, so the log's own hash covers it), and the check of a
transaction's legs as the ledger holds them now against that seal. No I/O.

Version 1's form is JSON (sorted keys, no spaces) of {"v": 1, "txn": id, "legs": [...]},
each leg a list of every column of its ledger row but its id and txn, with the project
of its allocation: [allocation, project, account, amount in milli-SU (its sign is its
side), time in UTC to the microsecond, kind, actor, reason, job, lien, usage record];
the legs in the order of their own JSON, so the order the database hands them back in
does not matter. A later form gets a new version; a link keeps the version it was sealed
with.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.accounting.audit_entry import canonical_time
from gateway.accounting.units import su

VERSION = 1
# One encoder for every call (json.dumps with options builds one each time).
_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                         allow_nan=False).encode


@dataclass(frozen=True)
class SealedLeg:
    """One leg of a transaction as sealed: its ledger row's columns (but id and txn) and
    its allocation's project."""

    allocation_id: int
    project_id: int | None
    account: str
    amount_milli: int
    at: datetime
    kind: str
    actor: str
    reason: str | None
    job_id: str | None
    lien_id: int | None
    usage_id: int | None


def canonical(txn: str, legs: Iterable[SealedLeg]) -> bytes:
    """The transaction's version-1 form."""
    forms = sorted(_dumps([leg.allocation_id, leg.project_id, leg.account, leg.amount_milli,
                           canonical_time(leg.at), leg.kind, leg.actor, leg.reason,
                           leg.job_id, leg.lien_id, leg.usage_id]) for leg in legs)
    # The JSON of {"v", "txn", "legs"} with sorted keys, the legs' JSON made once (this
    # runs for every posting: a settle step posts thousands).
    return f'{{"legs":[{",".join(forms)}],"txn":{_dumps(txn)},"v":{VERSION}}}'.encode()


def seal(txn: str, legs: Iterable[SealedLeg]) -> dict[str, Any]:
    """What the audit link of the transaction stores: the version and the form's sha256."""
    return {"v": VERSION, "sha256": hashlib.sha256(canonical(txn, legs)).hexdigest()}


@dataclass(frozen=True)
class Recorded:
    """An audit link that records a ledger transaction; `version` and `sha256` are its seal
    (None: the entry was written before the ledger was bound to the log)."""

    event_id: int
    at: datetime
    kind: str
    txn: str
    version: int | None
    sha256: str | None


def mismatch(link: Recorded, legs: Sequence[SealedLeg]) -> str | None:
    """Why the transaction's `legs`, as the ledger holds them now, do not match its link's
    seal (None: they match). The link must be sealed."""
    if link.version != VERSION:
        return (f"its entry sealed it with version {link.version}, which this gateway cannot "
                "check: verify with a newer gateway")
    if not legs:
        return "its entry records it but the ledger has no leg of it: its legs were deleted"
    if hashlib.sha256(canonical(link.txn, legs)).hexdigest() == link.sha256:
        return None
    now = describe((leg.allocation_id, leg.account, leg.amount_milli) for leg in legs)
    return ("its legs no longer match their entry's seal: they were changed after it was "
            f"written (the ledger now has {now})")


def describe(legs: Iterable[tuple[int, str, int]]) -> str:
    """Legs as (allocation, account, milli-SU) in words: "available +5.000 SU of
    allocation 3, ..."."""
    return ", ".join(f"{account} {'+' if amount > 0 else ''}{su(amount)} SU of allocation "
                     f"{allocation}" for allocation, account, amount in legs) or "no legs"
