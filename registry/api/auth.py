"""Bearer tokens and scopes.

A scope is `<namespace>:<action>` or `*:<action>`; actions rank
`read` < `report` < `publish` < `admin` (a higher one allows the lower), and
`read` < `review` < `admin` beside them: `review` approves or rejects the
versions a namespace holds for review, and neither `review` nor `publish`
allows the other (a pipeline's token never approves what it published).
`report` is what a gated server needs: read its toolset and send usage counts
(`POST /v1/namespaces/{ns}/usage`), and nothing that changes a definition. Tokens are
stored as hashes only (`registry.store.hash_token`), so a lookup compares hashes
in the database; the bootstrap token, the one secret held in memory, is
compared with `hmac.compare_digest`. Token values are never logged: the
principal carries the token's id.
"""

from __future__ import annotations

import hmac
from typing import Final, Literal

import msgspec

from registry.api.problems import ApiError

__all__ = ["ACTIONS", "Action", "Principal", "bearer_secret", "parse_scope"]

Action = Literal["read", "report", "publish", "review", "admin"]
# what each action allows: itself and those below it in the order of the module docstring
ACTIONS: Final[dict[str, frozenset[str]]] = {
    "read": frozenset({"read"}),
    "report": frozenset({"read", "report"}),
    "publish": frozenset({"read", "report", "publish"}),
    "review": frozenset({"read", "review"}),
    "admin": frozenset({"read", "report", "publish", "review", "admin"}),
}
BOOTSTRAP_ID: Final = "bootstrap"


def parse_scope(scope: str) -> tuple[str, str]:
    namespace, _, action = scope.partition(":")
    if not namespace or action not in ACTIONS:
        raise ValueError(
            f"scope {scope!r} is not <namespace>:<action> with action read, report, publish, "
            "review or admin"
        )
    return namespace, action


class Principal(msgspec.Struct, frozen=True):
    """Who is calling: a token id and its scopes; `token_id=None` is an anonymous caller."""

    token_id: str | None
    scopes: tuple[str, ...] = ()

    def allows(self, namespace: str | None, action: Action) -> bool:
        """`namespace=None` asks for the action on every namespace (`*:` scopes only)."""
        for scope in self.scopes:
            granted_ns, granted = parse_scope(scope)
            if action not in ACTIONS[granted]:
                continue
            if granted_ns == "*" or (namespace is not None and granted_ns == namespace):
                return True
        return False

    def require_somewhere(self, action: Action) -> None:
        """401 for an anonymous caller, 403 unless some scope grants `action` (or higher)."""
        self.require_token()
        if not any(action in ACTIONS[parse_scope(s)[1]] for s in self.scopes):
            raise ApiError(
                "forbidden",
                f"token {self.token_id} has no {action} scope (or a higher one) on any namespace",
            )

    def readable(self, namespace: str, open_reads: bool) -> bool:
        return open_reads or self.allows(namespace, "read")

    def require_token(self) -> None:
        """401 for an anonymous caller."""
        if self.token_id is None:
            raise ApiError(
                "unauthenticated",
                "this needs Authorization: Bearer <token>",
                headers={"WWW-Authenticate": 'Bearer realm="registry"'},
            )

    def require(self, namespace: str | None, action: Action) -> None:
        self.require_token()
        if not self.allows(namespace, action):
            where = namespace if namespace is not None else "*"
            raise ApiError(
                "forbidden",
                f"token {self.token_id} has no {where}:{action} scope (or a higher one)",
            )


def bearer_secret(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; ApiError when malformed."""
    if header is None:
        return None
    scheme, _, secret = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise ApiError(
            "unauthenticated",
            "the Authorization header must be 'Bearer <token>'",
            headers={"WWW-Authenticate": 'Bearer realm="registry"'},
        )
    return secret.strip()


def matches_secret(secret: str, expected: str | None) -> bool:
    """`secret` equals a configured secret (constant time); False when none is configured."""
    return expected is not None and hmac.compare_digest(secret.encode(), expected.encode())
