"""Workaround for paramiko#1115: our packets on a channel always go out before our CLOSE.

paramiko builds a channel message under the channel's lock but writes it after releasing
the lock, while its transport thread answers the server's CHANNEL_CLOSE with our own
CLOSE. A data, EOF or window-adjust packet can so follow our CLOSE, and OpenSSH then drops
the whole connection ("ieof packet referred to nonexistent channel"), failing every
command in flight on it (seen here with 12 threads sharing one connection). Each channel
we open gets a guard lock: our thread holds it while it may send on the channel, and the
transport thread's CLOSE (and request-failure) handling takes it too, so our packets
always go out before our CLOSE. Tunnels to a jump host carry another paramiko transport's
writes and are not covered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

import paramiko
from paramiko.common import MSG_CHANNEL_CLOSE, MSG_CHANNEL_FAILURE

_GUARD_ATTRIBUTE = "_gridgate_send_guard"
_ChannelHandler = Callable[[paramiko.Channel, paramiko.Message], None]


def send_guard(chan: paramiko.Channel) -> threading.Lock:
    """The channel's guard: hold it while sending on the channel (created on first use)."""
    guard: threading.Lock | None = getattr(chan, _GUARD_ATTRIBUTE, None)
    if guard is None:
        guard = threading.Lock()
        setattr(chan, _GUARD_ATTRIBUTE, guard)
    return guard


def _guarded(handler: _ChannelHandler) -> _ChannelHandler:
    def handle(chan: paramiko.Channel, message: paramiko.Message) -> None:
        guard: threading.Lock | None = getattr(chan, _GUARD_ATTRIBUTE, None)
        if guard is None:
            handler(chan, message)
            return
        with guard:
            handler(chan, message)

    return handle


def order_sends_before_close(conn: paramiko.Transport) -> None:
    """Route this connection's CLOSE/FAILURE handling through the channels' guards."""
    # paramiko internal (pinned <6 in pyproject.toml): the per-message handler table.
    table = dict(cast(Any, paramiko.Transport)._channel_handler_table)
    for ptype in (MSG_CHANNEL_CLOSE, MSG_CHANNEL_FAILURE):
        table[ptype] = _guarded(table[ptype])
    cast(Any, conn)._channel_handler_table = table
