"""Publish a server's own captured `initialize` result to the registry (seed 004 fixtures).

    await publish_capabilities(url, "billing", initialize_result, token=TOKEN)

`initialize_result` is what the server answers to `initialize`:
`{"protocolVersion", "capabilities", "serverInfo"}` (`registry.sdk.mcp_adapter.
captured_initialize` builds it from the official SDK's initialization options).
The registry stores it as an immutable, numbered record (an equal document
changes nothing) and answers `capabilities/check` from the latest one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import msgspec

__all__ = ["CapabilitiesError", "publish_capabilities"]


class CapabilitiesError(Exception):
    """The registry refused or could not be reached; the message names the URL and why."""


async def publish_capabilities(
    url: str,
    namespace: str,
    initialize_result: Mapping[str, Any],
    *,
    token: str | None = None,
    timeout: float = 10.0,
    client: httpx.AsyncClient | None = None,
) -> dict[str, Any]:
    """PUT the document; returns the stored record (`{namespace, seq, created_at, initialize}`)."""
    target = f"{url.rstrip('/')}/v1/namespaces/{namespace}/capabilities"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    own = client is None
    http = client or httpx.AsyncClient(timeout=timeout)
    try:
        response = await http.put(target, json=dict(initialize_result), headers=headers)
    except httpx.HTTPError as exc:
        raise CapabilitiesError(f"{target}: {type(exc).__name__}: {exc}") from exc
    finally:
        if own:
            await http.aclose()
    if response.status_code not in (200, 201):
        detail = response.text[:300]
        try:
            problem = msgspec.json.decode(response.content)
            if isinstance(problem, dict) and isinstance(problem.get("detail"), str):
                detail = problem["detail"]
        except msgspec.DecodeError:
            pass
        raise CapabilitiesError(f"{target}: HTTP {response.status_code}: {detail}")
    record: dict[str, Any] = response.json()
    return record
