"""A TCP proxy on localhost whose backend a test switches.

A connection goes to the backend of the moment it was accepted; connections already open
stay where they are. A test can so hand a client over from one server process to another
one it started beforehand, instead of racing a new process's start-up against the
client's reconnect attempts.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class SwitchingProxy:
    """Forwards 127.0.0.1:`port` to 127.0.0.1:`backend_port`; `switch` changes the latter."""

    def __init__(self, backend_port: int) -> None:
        self.backend_port = backend_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="test-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def switch(self, backend_port: int) -> None:
        """Send the connections accepted from now on to `backend_port`."""
        self.backend_port = backend_port

    def close(self) -> None:
        """Stop accepting, and close every connection still open."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        self._thread.join(timeout=10)
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a copy blocked reading it
                sock.close()
            self._open.clear()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.backend_port))
            except OSError:
                client.close()  # nothing listens there: the client sees the connection end
                continue
            with self._lock:
                self._open |= {client, upstream}
            ends = [2]  # the two directions; the last to end closes both sockets
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._copy, args=(source, target, client, upstream, ends),
                                 name="test-proxy-copy", daemon=True).start()

    def _copy(self, source: socket.socket, target: socket.socket, client: socket.socket,
              upstream: socket.socket, ends: list[int]) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)  # pass the end on, as the peer ended
        with self._lock:
            ends[0] -= 1
            if ends[0] == 0 and client in self._open:
                self._open -= {client, upstream}
                client.close()
                upstream.close()
