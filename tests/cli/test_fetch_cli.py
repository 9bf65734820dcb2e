"""`gridgate upload`, a job with inputs and output globs, `gridgate fetch` against a real
gateway (worker included): outputs verified, a partial fetch continued, a corrupted copy
on the gateway detected."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from gateway.store import BlobStore
from tests.cli.helpers import Cli

SCRIPT = ("mkdir -p out/deep && sha256sum input.bin | cut -c1-64 > out/input.sha && "
          "head -c 300000 /dev/urandom > out/deep/noise.bin && echo done > out/note.txt")


def run_job(cli: Cli, tmp_path: Path) -> tuple[str, bytes]:
    data = hashlib.shake_256(b"cli").digest(1_000_003)
    source = tmp_path / "input.bin"
    source.write_bytes(data)
    upload_id = cli("upload", str(source)).stdout.strip()
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({
        "name": "fetch-me", "executable": "/bin/sh", "args": ["-c", SCRIPT],
        "inputs": [{"source": f"upload:{upload_id}", "dest": "input.bin"}],
        "outputs": ["out/**"]}))
    result = cli("submit", str(spec), "--wait")
    assert "COMPLETED" in result.stderr
    return result.stdout.split()[2], data


def test_fetch_writes_verified_outputs(cli: Cli, tmp_path: Path) -> None:
    job_id, data = run_job(cli, tmp_path)
    results = tmp_path / "results"
    fetched = cli.json("fetch", job_id, "-o", str(results))["items"]
    assert sorted(f["path"] for f in fetched) == [
        "out/deep/noise.bin", "out/input.sha", "out/note.txt"]
    for item in fetched:
        local = results / item["path"]
        assert item["verified"] and item["file"] == str(local)
        assert hashlib.sha256(local.read_bytes()).hexdigest() == item["sha256"]
    assert (results / "out" / "input.sha").read_text().strip() == \
        hashlib.sha256(data).hexdigest()
    assert not list(results.rglob(".*gw-partial"))

    only = tmp_path / "only"
    printed = cli("fetch", job_id, "*.txt", "-o", str(only)).stdout.split()
    assert printed == [str(only / "out" / "note.txt")]
    assert [p.name for p in only.rglob("*") if p.is_file()] == ["note.txt"]
    none = cli("fetch", job_id, "*.nothing", "-o", str(only), code=1)
    assert "no collected outputs matching" in none.stderr

    # Done with them: dropped from the gateway store (and from the quota).
    assert "Deleted the fetched outputs" in cli("outputs-delete", job_id).stderr
    gone = cli("fetch", job_id, "-o", str(only), code=1)
    assert "no collected outputs at all" in gone.stderr


def test_fetch_continues_a_partial_file_and_detects_corruption(cli: Cli, tmp_path: Path
                                                               ) -> None:
    job_id, _ = run_job(cli, tmp_path)
    files = {f["path"]: f for f in cli.json("fetch", job_id, "-o", str(tmp_path / "a"))
             ["items"]}
    noise = files["out/deep/noise.bin"]
    whole = (tmp_path / "a" / "out" / "deep" / "noise.bin").read_bytes()
    # An earlier fetch stopped half-way: its partial file is continued (Range).
    target = tmp_path / "b" / "out" / "deep"
    target.mkdir(parents=True)
    (target / ".noise.bin.gw-partial").write_bytes(whole[:100_000])
    cli("fetch", job_id, "noise.bin", "-o", str(tmp_path / "b"))
    assert (target / "noise.bin").read_bytes() == whole
    # The gateway's copy rotted on disk: the client refuses to keep it.
    blob = BlobStore(cli.gateway.settings.store_dir).blob_path(noise["sha256"])
    rotten = bytearray(blob.read_bytes())
    rotten[5] ^= 0xFF
    blob.write_bytes(bytes(rotten))
    bad = cli("fetch", job_id, "noise.bin", "-o", str(tmp_path / "c"), code=1)
    assert "arrived with sha256" in bad.stderr
    assert not (tmp_path / "c" / "out" / "deep" / "noise.bin").exists()
