"""The long-poll hub (`registry.api.longpoll`) on its own: what a waiter ends with."""

from __future__ import annotations

import asyncio
from typing import Any

from registry.api.metrics import Metrics


async def test_a_long_poll_parked_after_a_newer_payload_came_gets_it_at_once() -> None:
    """The handler looks the payload up, then reads the (empty) body: a build may land
    in between. The waiter then answers with the newer payload instead of waiting."""
    from registry.api.answers import Answers
    from registry.api.limits import LimitLog
    from registry.api.longpoll import LongPolls
    from registry.api.revocations import Revocations
    from registry.policy.toolset import BuiltToolset

    async def never_revoked(_token: str) -> bool:
        return False

    metrics = Metrics()
    hub = LongPolls(
        limit=10, revocations=Revocations(never_revoked), metrics=metrics, limits=LimitLog(metrics)
    )
    old = BuiltToolset(b"{}", "sha256:" + "0" * 64, 0)
    new = BuiltToolset(b"[]", "sha256:" + "1" * 64, 0)
    seen = hub.answers("billing", old)
    hub.changed("billing", new)  # no waiter yet: nothing to wake

    async def hang_up_later() -> dict[str, Any]:
        await asyncio.sleep(30)
        return {"type": "http.disconnect"}

    waiter = hub.park("billing", seen, 30.0, None, hang_up_later)
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(waiter.answer({}, None, send), timeout=5)
    assert sent[0]["status"] == 200 and sent[1]["body"] == b"[]"
    assert hub.waiting == 0
    assert isinstance(hub.answers("billing"), Answers)
