"""containers.image.oci_layers: how each layer entry applies, table-driven, no I/O."""

from __future__ import annotations

import pytest

from containers.errors import UnsafeLayerEntry
from containers.image.oci_layers import Action, EntryType, Step, plan_entry

F, D, S, H, OT = (EntryType.FILE, EntryType.DIR, EntryType.SYMLINK, EntryType.HARDLINK,
                 EntryType.OTHER)


@pytest.mark.parametrize(("name", "kind", "link", "step"), [
    ("etc/passwd", F, None, Step(Action.WRITE, "etc/passwd")),
    ("./etc/passwd", F, None, Step(Action.WRITE, "etc/passwd")),
    ("usr//lib/./x", F, None, Step(Action.WRITE, "usr/lib/x")),
    ("usr/lib/", D, None, Step(Action.WRITE, "usr/lib")),
    ("./", D, None, Step(Action.SKIP, "")),
    ("dev/null", OT, None, Step(Action.SKIP, "dev/null")),
    ("etc/.wh.motd", F, None, Step(Action.WHITEOUT, "etc/motd")),
    (".wh.opt", F, None, Step(Action.WHITEOUT, "opt")),
    ("./var/.wh..wh..opq", F, None, Step(Action.OPAQUE, "var")),
    (".wh..wh..opq", F, None, Step(Action.OPAQUE, "")),
    ("lib", S, "usr/lib", Step(Action.WRITE, "lib", "usr/lib")),
    ("usr/bin/sh", S, "/bin/dash", Step(Action.WRITE, "usr/bin/sh", "/bin/dash")),
    ("usr/lib/x", S, "../../etc/x", Step(Action.WRITE, "usr/lib/x", "../../etc/x")),
    ("a/b", S, "../c/../d", Step(Action.WRITE, "a/b", "../c/../d")),
    ("bin/ln", H, "./bin/cp", Step(Action.WRITE, "bin/ln", "bin/cp")),
])
def test_plan_entry(name: str, kind: EntryType, link: str | None, step: Step) -> None:
    assert plan_entry(name, kind, link) == step


@pytest.mark.parametrize(("name", "kind", "link", "message"), [
    ("/etc/passwd", F, None, "absolute path"),
    ("../etc/passwd", F, None, "climbs out"),
    ("a/../../b", F, None, "climbs out"),
    ("a/..", D, None, "climbs out"),
    ("etc/.wh.", F, None, "whiteout of nothing"),
    (".", F, None, "replace the root"),
    ("x", S, "../etc/passwd", "points above the root"),
    ("usr/lib/x", S, "../../../etc/x", "points above the root"),
    ("a/b", S, "../../c/d", "points above the root"),
    ("x", S, "", "no target"),
    ("x", H, "/etc/shadow", "absolute path"),
    ("x", H, "../outside", "climbs out"),
    ("x", H, "./", "links to the root"),
])
def test_plan_entry_refuses(name: str, kind: EntryType, link: str | None,
                            message: str) -> None:
    with pytest.raises(UnsafeLayerEntry, match=message):
        plan_entry(name, kind, link)
