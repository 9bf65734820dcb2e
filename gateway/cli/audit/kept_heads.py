"""The newest tree head `gridgate audit verify` found sound, kept per gateway in the CLI's
configuration directory (`audit-heads.json`, 0600): the next run proves the log still
begins with it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import cast

from gateway.client.credentials import config_dir
from gateway.schemas.audit import TreeHeadOut


def path() -> Path:
    return config_dir() / "audit-heads.json"


def _all(where: Path) -> dict[str, TreeHeadOut]:
    try:
        return cast(dict[str, TreeHeadOut], json.loads(where.read_text()))
    except FileNotFoundError:
        return {}


def load(gateway: str) -> TreeHeadOut | None:
    """The head kept for `gateway`, if any."""
    return _all(path()).get(gateway)


def keep(gateway: str, head: TreeHeadOut) -> None:
    """Keep `head` as the newest one verified at `gateway`."""
    where = path()
    heads = {**_all(where), gateway: head}
    where.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = where.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(heads, out, indent=1, default=str)
    temporary.replace(where)
