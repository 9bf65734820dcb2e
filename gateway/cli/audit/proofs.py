"""What `gridgate audit` checks itself rather than taking from the gateway: a tree head's
signature against the gateway's published keys, a job's entries' inclusion proofs, and
the proof that the log still begins with a head kept from before (RFC 9162)."""

from __future__ import annotations

import json
from typing import Any, cast

from gateway.accounting import merkle
from gateway.schemas.audit import TREE_HEAD_TYPE, ConsistencyOut, JobStoryOut, TreeHeadOut


def signature_fault(head: TreeHeadOut, keys: dict[str, Any]) -> str | None:
    """Why `head`'s signature is not the gateway's over its size and root (None: it is)."""
    from joserfc import jws  # lazily: only the audit commands need it
    from joserfc.errors import JoseError
    from joserfc.jwk import KeySet

    try:
        signed = jws.deserialize_compact(head["signature"],
                                         KeySet.import_key_set(cast(Any, keys)),
                                         algorithms=["RS256"])
        claims = json.loads(signed.payload or b"null")
        if (signed.headers().get("typ") != TREE_HEAD_TYPE or claims["size"] != head["size"]
                or claims["root"] != head["root"]):
            return f"the tree head of size {head['size']} is not the one its signature covers"
    except (JoseError, ValueError, KeyError, TypeError) as exc:
        return ("the tree head's signature does not verify with the gateway's published "
                f"keys ({exc})")
    return None


def story_failures(story: JobStoryOut, keys: dict[str, Any]) -> list[str]:
    """What does not hold of a job's story: the head's signature, then each entry's
    inclusion proof from the hash of its text to the signed root."""
    head = story["tree_head"]
    proven = [e for e in story["audit"] if e["leaf"] is not None]
    if head is None:
        return [f"entry {e['id']} claims leaf {e['leaf']} of no signed tree head"
                for e in proven]
    failures = [fault] if (fault := signature_fault(head, keys)) else []
    root = bytes.fromhex(head["root"])
    for e in proven:
        path = [bytes.fromhex(h) for h in e["proof"] or []]
        if not merkle.verify_inclusion(merkle.leaf_hash(e["entry"].encode()), e["leaf"] or 0,
                                       head["size"], path, root):
            failures.append(f"entry {e['id']} ({e['kind']}) is not proven to be leaf "
                            f"{e['leaf']} of the signed tree")
    return failures


def consistency_fault(kept: TreeHeadOut, now: TreeHeadOut,
                      proof: ConsistencyOut | None) -> str | None:
    """Why the log whose newest head is `now` does not begin with the tree of `kept`
    (None: it does; `proof` is the gateway's consistency proof, None when the sizes are
    equal or the log shrank)."""
    if kept["size"] > now["size"]:
        return (f"the log now has {now['size']} entries but you verified a tree of "
                f"{kept['size']}: entries were removed")
    if kept["size"] == now["size"]:
        if kept["root"] != now["root"]:
            return f"the tree of {kept['size']} entries now has another root"
        return None
    path = [bytes.fromhex(h) for h in (proof or {"proof": []})["proof"]]
    if not merkle.verify_consistency(kept["size"], now["size"], bytes.fromhex(kept["root"]),
                                     bytes.fromhex(now["root"]), path):
        return (f"the log no longer begins with the tree of {kept['size']} entries you "
                "verified: what it covered was changed, removed or moved")
    return None
