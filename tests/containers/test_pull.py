"""The locked registry pull: exact argv, and the script run by /bin/sh with a stub runtime
pulls once, never shows a partial image, and leaves no partial file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from containers.errors import InvalidLaunch
from containers.pull import PULL_SCRIPT, pull_argv, pulled_name
from containers.refs import parse_image_ref
from containers.runtimes import RuntimeKind
from containers.site_caps import RuntimeOffer
from containers.versions import version

APPTAINER = RuntimeOffer(RuntimeKind.APPTAINER, version("1.2.5"))
REF = parse_image_ref("docker://ghcr.io/lab/app:1.0")


def test_exact_argv() -> None:
    argv, dest = pull_argv(APPTAINER, REF, "/scratch/.cache")
    assert dest == f"/scratch/.cache/{pulled_name(REF)}"
    assert argv == ["flock", f"{dest}.lock", "sh", "-c", PULL_SCRIPT, "sh", dest,
                    "docker://ghcr.io/lab/app:1.0", "apptainer"]


@pytest.mark.parametrize(("runtime", "ref", "says"), [
    (RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31")), REF, "ch-run cannot pull"),
    (APPTAINER, parse_image_ref("https://example.org/a.sif"), "not a registry image"),
])
def test_refusals(runtime: RuntimeOffer, ref: object, says: str) -> None:
    with pytest.raises(InvalidLaunch, match=says):
        pull_argv(runtime, ref, "/c")  # type: ignore[arg-type]


def test_the_script_pulls_once(tmp_path: Path) -> None:
    fake = tmp_path / "fake-apptainer"
    log = tmp_path / "pulls"
    fake.write_text(f"#!{sys.executable}\nimport sys\nopen({str(log)!r}, 'a').write("
                    "repr(sys.argv[1:]) + '\\n')\nopen(sys.argv[2], 'w').write('sif')\n")
    fake.chmod(0o755)
    cache = tmp_path / "cache"
    cache.mkdir()
    ref = parse_image_ref("docker://ghcr.io/lab/app:2.0")
    argv, dest = pull_argv(RuntimeOffer(RuntimeKind.APPTAINER, version("1.2.5"),
                                        (str(fake),)), ref, str(cache))
    for _ in range(2):
        subprocess.run(argv, check=True, cwd=tmp_path, timeout=30)
    assert Path(dest).read_text() == "sif"
    assert log.read_text().splitlines() == [repr(["pull", f"{dest}.partial", ref.uri])]
    assert not Path(f"{dest}.partial").exists()
