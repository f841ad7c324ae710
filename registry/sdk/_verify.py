"""The digest checks of a toolset payload: from its bytes when they are canonical,
otherwise by writing each definition canonically once.

    digests = digests_from_bytes(data, payload)   # only those not hashing as stated;
                                                  # None: not canonical bytes (older servers)
    checked = verify_payload(tree, payload)       # tree: parse_json's value; payload: Structs
    checked.payload_digest                        # to compare with the payload's `digest`
    checked.digests[id(definition)]               # each definition's digest (without _meta)

Both mappings are read as `digests.get(id(definition), stated)`: a definition
`digests_from_bytes` leaves out hashes to the digest the payload states.

The registry serves a payload as its canonical JSON with the `digest` member put
in its sorted place. Then the bytes without that member hash to the digest, and
each definition's bytes, as served, hash to its own digest: nothing needs to be
written again. A hash that matches proves the bytes are the canonical text that
was hashed (SHA-256 is not invertible), so this is as exact as writing them. A
definition with a `_meta`, which its digest leaves out, is checked on its bytes with
that member cut out where canonical JSON puts it (first: `_` sorts before every
lowercase key); one whose bytes still do not match (a key sorting before `_meta`,
or a payload whose bytes are not canonical) is written canonically after all.

`verify_payload` is the way for any payload: the payload digest covers the
whole payload, definitions included, and each definition's digest covers that
definition; each definition is written once, and its canonical bytes give its
digest and, unless it has a `_meta`, stand for it (as `msgspec.Raw`) when the
payload is written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import msgspec

from registry.canonical import (
    DigestError,
    canonical_of_parsed,
    canonical_of_parsed_many,
    digest,
    digest_of_canonical,
)

__all__ = ["Checked", "definitions", "digests_from_bytes", "verify_payload"]


# What of a payload the byte-level checks read: digests, and definitions as served.
class _Served(msgspec.Struct, gc=False):
    digest: str
    definition: msgspec.Raw


class _Retired(msgspec.Struct, gc=False):
    digest: str
    definition: msgspec.Raw = msgspec.Raw(b"null")  # Raw takes no union with None


class _Tool(msgspec.Struct, gc=False):
    versions: tuple[_Served, ...]
    retired: tuple[_Retired, ...] = ()


class _Alias(msgspec.Struct, gc=False):
    definition: msgspec.Raw


class _Meta(msgspec.Struct, gc=False):
    meta: msgspec.Raw = msgspec.field(name="_meta", default=msgspec.Raw(b"null"))


class _Payload(msgspec.Struct, gc=False):
    digest: str
    tools: tuple[_Tool, ...] = ()
    aliases: tuple[_Alias, ...] = ()


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _hash_without_digest(data: bytes, claimed: str) -> str | None:
    """The digest of the payload's bytes without its `digest` member, where canonical
    JSON has it (right after `aliases`, or first); None when it is not there. Hashed
    in two pieces around the member: the payload is not copied."""
    member = b',"digest":' + msgspec.json.encode(claimed)
    at = data.find(member)
    view = memoryview(data)
    if at >= 0:
        hashed = hashlib.sha256(view[:at])
        hashed.update(view[at + len(member) :])
        return "sha256:" + hashed.hexdigest()
    first = b'{"digest":' + msgspec.json.encode(claimed) + b","
    if data.startswith(first):
        hashed = hashlib.sha256(b"{")
        hashed.update(view[len(first) :])
        return "sha256:" + hashed.hexdigest()
    return None


_META_FIRST = b'{"_meta":'


def _hashes_without_meta(served: msgspec.Raw, stated: str) -> bool:
    """Whether a definition's canonical bytes, `_meta` first (the key sorts before
    any lowercase one), hash to `stated` once that member is cut out: the bytes of
    the definition without `_meta`, as its digest covers it. False for anything
    else (then the definition is written canonically)."""
    raw = bytes(served)
    if not raw.startswith(_META_FIRST):
        return False
    meta = bytes(msgspec.json.decode(raw, type=_Meta).meta)
    end = len(_META_FIRST) + len(meta)
    if raw[len(_META_FIRST) : end] != meta:  # not where canonical text has it (or twice)
        return False
    rest = raw[end:]
    if rest == b"}":
        return _sha(b"{}") == stated
    return rest[:1] == b"," and _sha(b"{" + rest[1:]) == stated


def digests_from_bytes(data: bytes, payload: Any) -> dict[int, str | Exception] | None:
    """The definitions (by `id()` in `payload`, the `ToolsetPayload` decoded from
    `data`) whose bytes do not hash to the digest the payload states for them, each
    with its digest written canonically (or why it has none), when `data` is canonical
    JSON whose payload digest holds; None otherwise (then `verify_payload` decides). A
    definition left out hashes to what the payload states: on the registry's own
    payloads, all of them, so the mapping is empty."""
    try:
        served = msgspec.json.decode(data, type=_Payload)
    except (msgspec.DecodeError, RecursionError):
        return None
    if _hash_without_digest(data, served.digest) != served.digest:
        return None
    others: dict[int, str | Exception] = {}

    def differs(definition: Any) -> None:
        # a `_meta` (outside the digest), or not the bytes that were hashed
        try:
            others[id(definition)] = digest(definition)
        except DigestError as exc:
            others[id(definition)] = exc

    # the served bytes against the digests stated beside them, in one flat pass each;
    # only a mismatch looks up its definition in `payload` (same order: both decoded
    # from `data`)
    sha256 = hashlib.sha256
    versions = [version for tool in served.tools for version in tool.versions]
    wrong = [
        i
        for i, v in enumerate(versions)
        if "sha256:" + sha256(v.definition).hexdigest() != v.digest
    ]
    if wrong:
        entries = [version for tool in payload.tools for version in tool.versions]
        for index in wrong:
            if not _hashes_without_meta(versions[index].definition, versions[index].digest):
                differs(entries[index].definition)
    retired = [gone for tool in served.tools for gone in tool.retired]
    wrong = [
        i
        for i, r in enumerate(retired)
        if r.definition != b"null" and "sha256:" + sha256(r.definition).hexdigest() != r.digest
    ]
    if wrong:
        entries = [gone for tool in payload.tools for gone in tool.retired]
        for index in wrong:
            if not _hashes_without_meta(retired[index].definition, retired[index].digest):
                differs(entries[index].definition)
    by_name = {tool.name: tool for tool in payload.tools}
    for held_alias, alias in zip(served.aliases, payload.aliases, strict=True):
        contract = by_name.get(alias.contract.tool)
        expected = contract.digest_of(alias.contract.version) if contract is not None else None
        raw = held_alias.definition
        if expected is None or (_sha(raw) != expected and not _hashes_without_meta(raw, expected)):
            differs(alias.definition)
    return others


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
