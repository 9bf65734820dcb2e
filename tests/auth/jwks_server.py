"""A tiny real HTTP server on 127.0.0.1 that publishes a JWKS and counts its fetches."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class JwksServer:
    url: str
    jwks: dict[str, Any] = field(default_factory=lambda: {"keys": []})
    hits: int = 0


@contextmanager
def serve_jwks(jwks: dict[str, Any] | None = None) -> Iterator[JwksServer]:
    state = JwksServer(url="", jwks=jwks or {"keys": []})

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits += 1
            body = json.dumps(state.jwks).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
