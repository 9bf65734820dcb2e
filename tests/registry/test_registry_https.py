"""A registry not listed in insecure_registries is reached over https only, its
certificate verified: a real `docker-registry` with TLS over the open one's storage, its
certificate (for 127.0.0.1) made here. `allowed` lets the gateway reach loopback for the
test (production allows public addresses only, tests/registry/test_registry_pull.py)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from containers.refs import parse_image_ref
from gateway.services.data.https_fetch import IPAddress
from gateway.services.images.registry_client import RegistryPullFailed
from gateway.services.images.registry_pull import registry_input
from gateway.settings import Settings
from gateway.store import BlobStore
from tests.registry.fixture import Registry, push_image, serve, tar_layer


def loopback(ip: IPAddress) -> bool:
    return ip.is_loopback


@pytest.fixture(scope="module")
def tls_registry(registry: Registry, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[tuple[str, Path]]:
    """HOST:PORT of a TLS registry over the open one's storage, and its certificate."""
    base = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (cert_file := base / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (key_file := base / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    trusted = ssl.create_default_context(cafile=str(cert_file))
    with serve(base, lambda port: {
            "version": 0.1, "log": {"level": "info"},
            "storage": {"filesystem": {"rootdirectory": str(registry.storage)}},
            "http": {"addr": f"127.0.0.1:{port}",
                     "tls": {"certificate": str(cert_file), "key": str(key_file)}}},
               scheme="https", tls=trusted) as port:
        yield f"127.0.0.1:{port}", cert_file


def test_an_https_registry_with_a_trusted_certificate(
        registry: Registry, tls_registry: tuple[str, Path], tmp_path: Path) -> None:
    host, cert = tls_registry
    push_image(registry, "lab/tls", "1", [tar_layer([("etc", "dir", None),
                                                     ("etc/tls", "file", b"tls\n")])], [])
    resolved = registry_input(Settings(data_dir=tmp_path), BlobStore(tmp_path / "store"),
                              parse_image_ref(f"docker://{host}/lab/tls:1"), allowed=loopback,
                              tls=ssl.create_default_context(cafile=str(cert)))
    assert resolved.expected.size > 0


def test_an_untrusted_certificate_is_refused(registry: Registry,
                                             tls_registry: tuple[str, Path],
                                             tmp_path: Path) -> None:
    host, _ = tls_registry
    ref = f"docker://{host}/lab/tls:1"
    with pytest.raises(RegistryPullFailed, match=f"pulling {ref}: the registry at {host} "
                                                 "did not answer .*CERTIFICATE_VERIFY_FAILED"):
        registry_input(Settings(data_dir=tmp_path), BlobStore(tmp_path / "store"),
                       parse_image_ref(ref), allowed=loopback)
