"""A clock for the registry under test: now, plus an offset a test moves on.

clock = Clock()
app = await serve(database_url, clock=clock)   # tests/api/conftest.py
clock.advance(timedelta(days=7))               # a window passes, no sleeping
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class Clock:
    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, delta: timedelta) -> None:
        self.offset += delta
