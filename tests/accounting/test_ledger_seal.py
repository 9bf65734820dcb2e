"""The ledger's seal, pure: version 1's canonical form byte for byte, every column of a leg
in it, the legs' order not, and what `mismatch` says for legs changed, deleted or sealed
by a version it does not know."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from gateway.accounting.ledger_seal import (
    VERSION,
    Recorded,
    SealedLeg,
    canonical,
    describe,
    mismatch,
    seal,
)

T0 = datetime(2026, 11, 25, 12, 0, 0, 123456, tzinfo=UTC)
TXN = "5d0c3c8e-0000-4000-8000-000000000001"
GRANT = [SealedLeg(3, 7, "funding", -5000, T0, "deposit", "committee", "award é", None, None,
                   None),
         SealedLeg(3, 7, "available", 5000, T0, "deposit", "committee", "award é", None, None,
                   None)]


def link(legs: list[SealedLeg], version: int | None = VERSION) -> Recorded:
    sealed = seal(TXN, legs)
    return Recorded(12, T0, "deposit", TXN, version, sealed["sha256"])


def test_version_1_form() -> None:
    eastern = [replace(leg, at=T0.astimezone(timezone(timedelta(hours=-5)))) for leg in GRANT]
    expected = (
        '{"legs":[[3,7,"available",5000,"2026-11-25T12:00:00.123456Z","deposit","committee",'
        '"award é",null,null,null],[3,7,"funding",-5000,"2026-11-25T12:00:00.123456Z",'
        '"deposit","committee","award é",null,null,null]],'
        f'"txn":"{TXN}","v":1}}').encode()
    assert canonical(TXN, eastern) == canonical(TXN, GRANT) == expected
    # It is the JSON of that object with sorted keys and no spaces.
    assert json.dumps(json.loads(expected), sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode() == expected
    assert seal(TXN, GRANT) == {"v": 1, "sha256": hashlib.sha256(expected).hexdigest()}


def test_the_legs_order_is_not_in_the_seal() -> None:
    assert seal(TXN, GRANT) == seal(TXN, list(reversed(GRANT)))


@pytest.mark.parametrize("field, value", [
    ("allocation_id", 4), ("project_id", 8), ("project_id", None), ("account", "used"),
    ("amount_milli", 6000), ("at", T0 + timedelta(microseconds=1)), ("kind", "adjustment"),
    ("actor", "mallory"), ("reason", None), ("job_id", "j"), ("lien_id", 1), ("usage_id", 1),
])
def test_every_column_of_a_leg_is_in_the_seal(field: str, value: object) -> None:
    changed = [replace(GRANT[0], **{field: value}), GRANT[1]]
    assert mismatch(link(GRANT), GRANT) is None
    why = mismatch(link(GRANT), changed)
    assert why is not None and why.startswith("its legs no longer match their entry's seal")


def test_the_txn_is_in_the_seal() -> None:
    assert seal(TXN, GRANT) != seal(TXN.replace("1", "2"), GRANT)


def test_a_leg_deleted_or_added_is_a_mismatch() -> None:
    assert mismatch(link(GRANT), GRANT[:1]) is not None
    assert mismatch(link(GRANT), [*GRANT, GRANT[1]]) is not None
    assert mismatch(link(GRANT), []) == (
        "its entry records it but the ledger has no leg of it: its legs were deleted")


def test_an_unknown_version_is_not_taken_as_a_match() -> None:
    why = mismatch(link(GRANT, version=2), GRANT)
    assert why is not None and "version 2, which this gateway cannot check" in why


def test_legs_in_words() -> None:
    assert describe([(3, "funding", -1_005_000), (3, "available", 1_005_000)]) == (
        "funding -1,005.000 SU of allocation 3, available +1,005.000 SU of allocation 3")
    assert describe([]) == "no legs"
