"""Server-sent events as the HTTP relay needs them: whole events, byte for byte.

    splitter = EventSplitter()
    for event in splitter.feed(chunk):     # each a complete event, its blank line included
        message = json_message(event)      # the JSON-RPC message its data carries, or None
    encode_event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

Written here rather than taken from httpx-sse: the relay passes the upstream's
events on unchanged (ids, comments, retry fields and line endings included) and
only needs to know where one ends, so that an event of its own (a toolset swap's
list_changed) is never put inside one of the upstream's.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["EventSplitter", "encode_event", "json_message"]

_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


class EventSplitter:
    """Cuts a byte stream into complete events (the bytes up to and with the blank line)."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        self._buffer += chunk
        events: list[bytes] = []
        while (end := _END.search(self._buffer)) is not None:
            events.append(self._buffer[: end.end()])
            self._buffer = self._buffer[end.end() :]
        return events

    def rest(self) -> bytes:
        """What came after the last complete event (sent on as it is at the end)."""
        rest, self._buffer = self._buffer, b""
        return rest


def json_message(event: bytes) -> Any:
    """The JSON value an event's `data:` lines carry, or None (a comment, a ping, not JSON)."""
    lines = event.decode("utf-8", "replace").splitlines()
    data = [line[5:].removeprefix(" ") for line in lines if line.startswith("data:")]
    if not data:
        return None
    try:
        return json.loads("\n".join(data))
    except ValueError:
        return None


def encode_event(message: dict[str, Any]) -> bytes:
    """One `message` event carrying a JSON-RPC message."""
    return b"event: message\ndata: " + json.dumps(message, separators=(",", ":")).encode() + b"\n\n"
