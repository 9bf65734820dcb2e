"""A real HTTP receiver for webhook tests: http.server on 127.0.0.1 in a thread, recording
every request and answering with the statuses the test queues (then 200), once `hold`
is set if there is one. With `keep_alive` it speaks HTTP/1.1 and keeps connections open
(one thread per connection); `down()` refuses connections (and cuts the open ones)
until `up()`, on the same port."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class _Server(ThreadingHTTPServer):
    # http.server's listen backlog is 5: more concurrent deliveries than that would
    # have their connections dropped and retried by TCP a second later.
    request_queue_size = 128

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.open: set[socket.socket] = set()
        self.open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.open_lock:
            self.open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.open_lock:
            self.open.discard(request)
        super().shutdown_request(request)

    def cut(self) -> None:
        """Close the connections still open (kept alive)."""
        with self.open_lock:
            conns, self.open = self.open, set()
        for conn in conns:
            with suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


@dataclass
class Receiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    always: int | None = None
    keep_alive: bool = False
    # Set: each request is recorded, then answered only once this is set.
    hold: threading.Event | None = None
    _port: int = 0
    _server: _Server | None = None
    _thread: threading.Thread | None = None

    def up(self) -> None:
        """Listen (again, on the same port)."""
        me = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if self.keep_alive else "HTTP/1.0"
            # Its header and body writes would otherwise wait on the client's delayed ACK.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                me.requests.append(Received(self.path, {k.lower(): v for k, v in
                                                        self.headers.items()}, body))
                if me.hold is not None:
                    me.hold.wait()
                status = me.always or (me.statuses.pop(0) if me.statuses else 200)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"no" if status >= 300 else b"ok")

            def log_message(self, *args: object) -> None:
                pass

        self._server = _Server(("127.0.0.1", self._port), Handler)
        self._port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self._port}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def down(self) -> None:
        """Refuse connections: stop listening and cut the open ones."""
        if self._server is None or self._thread is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server.cut()
        self._thread.join()
        self._server = self._thread = None


@contextmanager
def receiver(keep_alive: bool = False) -> Iterator[Receiver]:
    me = Receiver("", keep_alive=keep_alive)
    me.up()
    try:
        yield me
    finally:
        me.down()
