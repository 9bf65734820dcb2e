"""A real HTTP receiver for webhook tests: http.server on 127.0.0.1 in a thread, recording
every request and answering with the statuses the test queues (then 200)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    requests: list[Received] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    always: int | None = None


class _Server(ThreadingHTTPServer):
    # http.server's listen backlog is 5: more concurrent deliveries than that would
    # have their connections dropped and retried by TCP a second later.
    request_queue_size = 128


@contextmanager
def receiver() -> Iterator[Receiver]:
    box: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            me = box[0]
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            me.requests.append(Received(self.path, {k.lower(): v for k, v in
                                                    self.headers.items()}, body))
            status = me.always or (me.statuses.pop(0) if me.statuses else 200)
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"no" if status >= 300 else b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    box.append(Receiver(f"http://127.0.0.1:{server.server_address[1]}/hook"))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield box[0]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
