"""Learning that a job has ended from the event stream, beside a follow of its output:
`EndWatch` follows the job's events in a thread and, the moment the job is final, cuts
the output stream the follow has open (by shutting its socket), so the follow reads what
is left and stops at once instead of when the gateway's own follow next looks at the
job. Against a gateway without a stream (gateway.client.stream_waits says when) it does
nothing: the gateway ends the follow, as before."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import httpx

from gateway.client.models import is_final
from gateway.client.stream_waits import BROKEN, on_stream, shut, stream_or_poll

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient


class EndWatch:
    """Watches one job's events in a daemon thread; `ended` is set once it is final."""

    def __init__(self, client: GatewayClient, job_id: str) -> None:
        self.ended = threading.Event()
        self._client = client
        self._job_id = job_id
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._output: httpx.Response | None = None
        self._events: httpx.Response | None = None
        self._thread = threading.Thread(target=self._run, name=f"end-watch-{job_id[:8]}",
                                        daemon=True)

    def __enter__(self) -> EndWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop watching: the event stream's connection is shut, not left open."""
        self._stopped.set()
        with self._lock:
            if self._events is not None:
                shut(self._events)
        self._thread.join(timeout=5)

    def following(self, response: httpx.Response | None) -> None:
        """The output stream to cut when the job ends (None: none open now). One opened
        after the end is cut at once."""
        with self._lock:
            self._output = response
            if response is not None and self.ended.is_set():
                shut(response)

    def _run(self) -> None:
        try:
            if stream_or_poll(self._watch, lambda: False):
                with self._lock:
                    if not self._stopped.is_set():
                        self.ended.set()
                        if self._output is not None:
                            shut(self._output)
        except Exception:  # the gateway still ends the follow by itself
            return

    def _watch(self) -> bool | None:
        """True once the job is final (or the watch stopped); None if the gateway ended
        the stream."""
        if self._stopped.is_set():
            return False
        try:
            return on_stream(self._client, [("job", self._job_id)], self._final, bool, None,
                             opened=self._opened)
        except BROKEN:
            if self._stopped.is_set():
                return False
            raise

    def _opened(self, response: httpx.Response) -> None:
        with self._lock:
            self._events = response
            if self._stopped.is_set():
                shut(response)

    def _final(self) -> bool:
        return self._stopped.is_set() or is_final(self._client.get_job(self._job_id))
