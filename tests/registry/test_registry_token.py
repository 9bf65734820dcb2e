"""The distribution token flow against a real registry: a second `docker-registry` serving
the same storage with `auth: token` (its JWTs checked against a certificate made here), and
a token service in this process that hands out signed pull tokens anonymously, as Docker
Hub does for public images. The gateway meets the 401 challenge, fetches a token for the
scope the challenge names, and pulls with it."""

from __future__ import annotations

import base64
import datetime as dt
import http.server
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from joserfc import jwt
from joserfc.jwk import RSAKey

from containers.refs import parse_image_ref
from gateway.services.images.registry_client import RegistryPullFailed
from gateway.services.images.registry_pull import registry_input
from gateway.settings import Settings
from gateway.store import BlobStore
from tests.registry.fixture import Registry, push_image, serve, tar_layer

SERVICE, ISSUER = "gridgate-test-registry", "gridgate-test-issuer"


class TokenService:
    def __init__(self, key: rsa.RSAPrivateKey, cert: x509.Certificate) -> None:
        self.key, self.cert = key, cert
        self.asked: list[dict[str, list[str]]] = []
        self.refuse = False

    def token(self, scope: str) -> str:
        kind, name, actions = scope.split(":")
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "x5c": [base64.b64encode(
            self.cert.public_bytes(serialization.Encoding.DER)).decode()]}
        claims = {"iss": ISSUER, "sub": "", "aud": SERVICE, "exp": now + 300,
                  "nbf": now - 10, "iat": now, "jti": str(uuid.uuid4()),
                  "access": [{"type": kind, "name": name, "actions": actions.split(",")}]}
        pem = self.key.private_bytes(serialization.Encoding.PEM,
                                     serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())
        return jwt.encode(header, claims, RSAKey.import_key(pem))


def _certificate(key: rsa.RSAPrivateKey) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gridgate test token signer")])
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))


@pytest.fixture(scope="module")
def token_service() -> Iterator[tuple[TokenService, str]]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    service = TokenService(key, _certificate(key))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            query = parse_qs(urlsplit(self.path).query)
            service.asked.append(query)
            if service.refuse:
                self.send_response(401)
                self.end_headers()
                return
            body = json.dumps({"token": service.token(query["scope"][0])}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield service, f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def guarded(registry: Registry, token_service: tuple[TokenService, str],
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A token-protected registry over the open one's storage; its HOST:PORT."""
    service, token_host = token_service
    base = tmp_path_factory.mktemp("guarded")
    bundle = base / "signer.pem"
    bundle.write_bytes(service.cert.public_bytes(serialization.Encoding.PEM))
    with serve(base, lambda port: {
            "version": 0.1, "log": {"level": "info"},
            "storage": {"filesystem": {"rootdirectory": str(registry.storage)}},
            "http": {"addr": f"127.0.0.1:{port}"},
            "auth": {"token": {"realm": f"http://{token_host}/token", "service": SERVICE,
                               "issuer": ISSUER, "rootcertbundle": str(bundle)}}},
               ready=401) as port:
        yield f"127.0.0.1:{port}"


def _settings(tmp_path: Path, *hosts: str) -> Settings:
    return Settings(data_dir=tmp_path, insecure_registries=",".join(hosts))  # type: ignore[call-arg]


def test_a_token_protected_registry_is_pulled_with_a_token(
        registry: Registry, guarded: str, token_service: tuple[TokenService, str],
        tmp_path: Path) -> None:
    service, token_host = token_service
    push_image(registry, "lab/guarded", "1", [tar_layer([("etc", "dir", None),
                                                         ("etc/x", "file", b"x\n")])], [])
    # Without a token the registry refuses: the gateway really needs the flow.
    assert httpx.get(f"http://{guarded}/v2/lab/guarded/manifests/1").status_code == 401
    service.asked.clear()
    resolved = registry_input(_settings(tmp_path, guarded, token_host),
                              BlobStore(tmp_path / "store"),
                              parse_image_ref(f"docker://{guarded}/lab/guarded:1"))
    assert resolved.expected.size > 0
    assert service.asked[0]["service"] == [SERVICE]
    assert service.asked[0]["scope"] == ["repository:lab/guarded:pull"]
    assert len(service.asked) == 1  # one token for the manifest and every blob


def test_a_refused_token_is_unauthorized(registry: Registry, guarded: str,
                                         token_service: tuple[TokenService, str],
                                         tmp_path: Path) -> None:
    service, token_host = token_service
    ref = f"docker://{guarded}/lab/guarded:1"
    service.refuse = True
    try:
        with pytest.raises(RegistryPullFailed, match=f"pulling {ref}: unauthorized"):
            registry_input(_settings(tmp_path, guarded, token_host),
                           BlobStore(tmp_path / "store"), parse_image_ref(ref))
    finally:
        service.refuse = False


def test_a_token_service_not_listed_is_not_reached_over_http(
        registry: Registry, guarded: str, tmp_path: Path) -> None:
    ref = f"docker://{guarded}/lab/guarded:1"
    with pytest.raises(RegistryPullFailed, match="/token is not https"):
        registry_input(_settings(tmp_path, guarded), BlobStore(tmp_path / "store"),
                       parse_image_ref(ref))


