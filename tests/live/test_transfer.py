"""Staging on the live testbed over the real SSH transport (pinned keys): files of 32 MiB
and more go through OpenSSH `ssh` processes (adapters.ssh.openssh.bulk), smaller ones through
paramiko."""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.ssh import SshTarget, SshTransport
from adapters.transfer import copy_site_to_site, stage_file
from adapters.transfer.cache_prune import Pruned, prune
from adapters.transfer.site_fs import sha256_of
from testbed.state import SiteInfo, TestbedInfo
from tests.testbed.fixture import ssh

MIB = 1 << 20
ACCOUNT = "gwcomm"


def transport_for(site: SiteInfo) -> SshTransport:
    return SshTransport(SshTarget(host=site.ip, port=site.ssh_port, user=ACCOUNT,
                                  host_keys=(site.host_key,), key_path=site.key(ACCOUNT),
                                  site=site.name))


@pytest.fixture
def transports(testbed: TestbedInfo) -> Iterator[dict[str, SshTransport]]:
    made = {name: transport_for(testbed.sites[name]) for name in ("roadrunner", "galaxy")}
    yield made
    for t in made.values():
        t.close()


@pytest.fixture
def big_file() -> Iterator[tuple[Path, str, int]]:
    """200 MiB of random bytes on tmpfs, with its sha256."""
    size = 200 * MIB
    path = Path("/dev/shm") / f"gw-transfer-{secrets.token_hex(4)}"
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        for _ in range(size // (8 * MIB)):
            block = os.urandom(8 * MIB)
            digest.update(block)
            out.write(block)
    yield path, digest.hexdigest(), size
    path.unlink()


def job_dir(site: SiteInfo) -> str:
    return f"{site.scratch_root}/gw-transfer-{secrets.token_hex(4)}"


def test_200mib_upload_is_verified_on_the_site(testbed: TestbedInfo,
                                               transports: dict[str, SshTransport],
                                               big_file: tuple[Path, str, int]) -> None:
    site = testbed.sites["roadrunner"]
    path, digest, size = big_file
    dest = f"{job_dir(site)}/in/data.bin"
    result = stage_file(transports["roadrunner"], str(path), digest, size, dest)
    assert (result.bytes_sent, result.cached, result.resends) == (size, False, 0)
    out = ssh(site, ACCOUNT, ["sh", "-c", 'sha256sum "$1"; stat -c %a "${1%/*}"; ls -A "${1%/*}"',
                              "x", dest]).stdout.split()
    assert out[0] == digest
    assert out[2:] == ["700", "data.bin"]


def test_dropped_connection_mid_upload_resumes(testbed: TestbedInfo,
                                               transports: dict[str, SshTransport],
                                               big_file: tuple[Path, str, int]) -> None:
    site = testbed.sites["roadrunner"]
    transport = transports["roadrunner"]
    path, digest, size = big_file
    dest = f"{job_dir(site)}/data.bin"
    dropped = threading.Event()
    killers: list[threading.Thread] = []

    def progress(done: int) -> None:
        # Once, a third of the way in: drop the pooled connection from another thread.
        if done >= size // 3 and not dropped.is_set():
            dropped.set()
            killer = threading.Thread(target=transport.disconnect)
            killer.start()
            killers.append(killer)

    connects_before = transport.connects
    result = stage_file(transport, str(path), digest, size, dest, progress=progress)
    for killer in killers:
        killer.join()
    assert dropped.is_set()
    assert result.resumes >= 1
    assert transport.connects > connects_before  # it reconnected
    # The cut hit the striped OpenSSH streams; the resumed upload opened new ones.
    assert transport.bulk is not None and transport.bulk.connects >= 2 * transport.bulk.streams
    assert result.bytes_sent < 1.3 * size, result
    assert sha256_of(transport, dest) == digest


def test_site_to_site_copy_roadrunner_to_galaxy(testbed: TestbedInfo,
                                                transports: dict[str, SshTransport],
                                                big_file: tuple[Path, str, int]) -> None:
    rr, galaxy = testbed.sites["roadrunner"], testbed.sites["galaxy"]
    path, digest, size = big_file
    src = f"{job_dir(rr)}/results.bin"
    stage_file(transports["roadrunner"], str(path), digest, size, src)
    cache = f"{galaxy.scratch_root}/.gridgate-cache-{secrets.token_hex(4)}"
    dest = f"{job_dir(galaxy)}/in/results.bin"
    result = copy_site_to_site(transports["roadrunner"], src, transports["galaxy"], dest,
                               cache_dir=cache)
    assert (result.bytes_sent, result.cached) == (size, False)
    assert ssh(galaxy, ACCOUNT, ["sha256sum", dest]).stdout.split()[0] == digest
    # Another job at galaxy wanting the same content: served by galaxy's cache.
    again = copy_site_to_site(transports["roadrunner"], src, transports["galaxy"],
                              f"{job_dir(galaxy)}/in/results.bin", sha256=digest, size=size,
                              cache_dir=cache)
    assert (again.bytes_sent, again.cached) == (0, True)


class CorruptsFirstWrite:
    """The real transport, except that right after the first upload completes one byte of
    the written file (`original_byte`, at offset 1000) is changed on the site (as a faulty
    disk or a meddling process would), before the gateway verifies it."""

    def __init__(self, inner: SshTransport, original_byte: int) -> None:
        self.inner, self.original_byte = inner, original_byte
        self.corrupted: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def upload(self, source: Any, path: str, **kwargs: Any) -> int:
        written = self.inner.upload(source, path, **kwargs)
        if not self.corrupted:
            self.corrupted.append(path)
            # Invert the file's 1001st byte (so the new value always differs); printf
            # turns the octal escape into that byte, dd with conv=notrunc keeps the size.
            flipped = self.original_byte ^ 0xFF
            result = self.inner.run(["sh", "-c", 'printf "$2" | dd of="$1" bs=1 seek=1000 '
                                     'conv=notrunc status=none', "corrupt", path,
                                     f"\\{flipped:03o}"])
            assert result.exit_status == 0, result
        return written


def test_corruption_between_write_and_verify_is_detected_and_resent(
        testbed: TestbedInfo, transports: dict[str, SshTransport]) -> None:
    site = testbed.sites["roadrunner"]
    data = os.urandom(3 * MIB + 5)
    source = Path("/dev/shm") / f"gw-corrupt-{secrets.token_hex(4)}"
    source.write_bytes(data)
    try:
        transport = CorruptsFirstWrite(transports["roadrunner"], data[1000])
        dest = f"{job_dir(site)}/in/data.bin"
        digest = hashlib.sha256(data).hexdigest()
        result = stage_file(transport, str(source), digest, len(data), dest)
    finally:
        source.unlink()
    assert transport.corrupted, "the fault was never injected"
    assert result.resends == 1 and result.bytes_sent == 2 * len(data), result
    assert sha256_of(transports["roadrunner"], dest) == digest


@pytest.mark.parametrize("site_name", ["roadrunner", "galaxy"])
def test_a_cache_entry_no_job_holds_is_pruned_once_idle(
        testbed: TestbedInfo, transports: dict[str, SshTransport], tmp_path: Path,
        site_name: str) -> None:
    """adapters.transfer.cache_prune over SSH, with the site's own find, stat and rm."""
    site = testbed.sites[site_name]
    source = tmp_path / "data.bin"
    source.write_bytes(os.urandom(MIB))
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    base = job_dir(site)
    cache, held, freed = f"{base}/cache", f"{base}/job-1/in", f"{base}/job-2/in"
    for dest in (held, freed):
        stage_file(transports[site_name], str(source), digest, MIB, dest, cache_dir=cache)
    other = hashlib.sha256(b"other").hexdigest()
    ssh(site, ACCOUNT, ["sh", "-c", 'printf x > "$1/$2" && mkdir "$1/$2.d" && rm "$3" && '
                        'touch -d "30 days ago" "$1/$2" "$1/$2.d" "$1/$4"',
                        "x", cache, other, freed, digest])
    pruned = prune(transports[site_name], cache, idle_seconds=14 * 86400)
    # `other` and its unpacked tree held by no job: gone; the staged entry is still
    # linked from job-1: kept, and job-1's file intact.
    assert pruned == Pruned(files=1, unpacked=1, bytes_freed=1)
    listing = ssh(site, ACCOUNT, ["sh", "-c", 'ls -A "$1"; sha256sum "$2"', "x", cache,
                                  held]).stdout.split()
    assert listing == [digest, digest, held]
    ssh(site, ACCOUNT, ["rm", "-rf", base])
