"""The digest checks of a toolset payload, each definition written canonically once.

    checked = verify_payload(tree, payload)   # tree: parse_json's value; payload: its Structs
    checked.payload_digest                    # to compare with the payload's `digest`
    checked.digests[id(definition)]           # the digest of each definition (without _meta)

The payload digest covers the whole payload, definitions included, and each
definition's digest covers that definition: written naively, every definition
is canonicalised twice. Here each one is written once; its canonical bytes give
its digest and, unless it has a `_meta` (which the payload digest covers and a
definition digest does not), stand for it, as `msgspec.Raw`, when the payload
is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from registry.canonical import canonical_of_parsed, canonical_of_parsed_many, digest_of_canonical

__all__ = ["Checked", "definitions", "verify_payload"]


class Checked:
    __slots__ = ("digests", "payload_digest")

    def __init__(self, payload_digest: str, digests: dict[int, str | Exception]) -> None:
        self.payload_digest = payload_digest
        # id() of each definition of the payload Structs -> its digest, or why it has none
        self.digests = digests


def _holders(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON objects of a payload that hold a definition, in `definitions` order."""
    found: list[dict[str, Any]] = []
    for tool in tree.get("tools", ()):
        found += tool["versions"]
        if tool.get("retired"):
            found += [gone for gone in tool["retired"] if gone.get("definition") is not None]
    found += tree.get("aliases", ())
    return found


def definitions(payload: Any) -> Iterator[dict[str, Any]]:
    """Every definition of a `ToolsetPayload`: served, retired, of aliases."""
    for tool in payload.tools:
        for entry in tool.versions:
            yield entry.definition
        for gone in tool.retired:
            if gone.definition is not None:
                yield gone.definition
    for alias in payload.aliases:
        yield alias.definition


def verify_payload(tree: dict[str, Any], payload: Any) -> Checked:
    """Digests of a payload `tree` (from `parse_json`) whose shape `payload` (its
    `ToolsetPayload`) has been checked. `tree` is left as it was."""
    holders = list(zip(_holders(tree), definitions(payload), strict=True))
    # What each definition's digest covers: the definition without its `_meta`.
    bodies = [
        {k: v for k, v in node["definition"].items() if k != "_meta"}
        if "_meta" in node["definition"]
        else node["definition"]
        for node, _ in holders
    ]
    digests: dict[int, str | Exception] = {}
    try:
        texts: list[bytes | None] = list(canonical_of_parsed_many(bodies))
    except ValueError:  # DigestError: one at a time, to say which definition
        texts = []
        for (_, definition), body in zip(holders, bodies, strict=True):
            try:
                texts.append(canonical_of_parsed(body))
            except ValueError as exc:
                digests[id(definition)] = exc
                texts.append(None)
    stood_in: list[tuple[dict[str, Any], Any]] = []
    try:
        for (node, definition), body, text in zip(holders, bodies, texts, strict=True):
            if text is None:
                continue
            digests[id(definition)] = digest_of_canonical(text)
            if body is node["definition"]:  # no _meta: its canonical text stands for it
                stood_in.append((node, body))
                node["definition"] = msgspec.Raw(text)
        whole_body = {key: value for key, value in tree.items() if key != "digest"}
        try:
            whole: bytes | None = canonical_of_parsed(whole_body)
        except ValueError:
            whole = None  # the reference cannot read the stand-ins: again, without them
    finally:
        for node, original in stood_in:
            node["definition"] = original
    if whole is None:
        whole = canonical_of_parsed(whole_body)
    return Checked(digest_of_canonical(whole), digests)
