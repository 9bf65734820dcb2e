"""Outputs sent by PUT: a real local HTTP server receives the bytes; an error answer, a
redirect and a private address are failures that say so."""

from __future__ import annotations

import http.server
import io

import pytest

from gateway.services.data.https_put import PutFailed, put
from tests.staging.helpers import http_server, only_test_host

received: dict[str, bytes] = {}


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_PUT(self) -> None:
        size = int(self.headers["Content-Length"])
        status = {"/denied": 403, "/moved": 307}.get(self.path.split("?")[0], 201)
        received[self.path] = self.rfile.read(size)
        self.send_response(status)
        if status == 307:
            self.send_header("Location", "/elsewhere")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_put_sends_the_bytes() -> None:
    body = b"result\n" * 100_000
    with http_server(_Handler) as port:
        put(f"http://127.0.0.2:{port}/run/out.txt?sig=a%2Fb", io.BytesIO(body), len(body),
            timeout=10, schemes=("http",), allowed=only_test_host)
        for path, says in (("/denied", "HTTP 403"), ("/moved", "HTTP 307")):
            with pytest.raises(PutFailed, match=says):
                put(f"http://127.0.0.2:{port}{path}", io.BytesIO(b"x"), 1, timeout=10,
                    schemes=("http",), allowed=only_test_host)
        with pytest.raises(PutFailed, match="not a public address"):
            put(f"http://127.0.0.2:{port}/x", io.BytesIO(b"x"), 1, timeout=10,
                schemes=("http",))
    assert received["/run/out.txt?sig=a%2Fb"] == body
    with pytest.raises(PutFailed, match="not an https URL"):
        put("http://example.org/x", io.BytesIO(b"x"), 1, timeout=10)
