"""The headers of every console answer: its pages, fragments, error pages and assets.

The router sets them on what its handlers answer; the error pages, answered by
exception handlers (which Litestar's layered `response_headers` do not reach),
set them themselves (`registry.console.session`). Without them an error page
would get the API's policy (`registry.api.observe`), which loads no stylesheet.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CONTENT_SECURITY_POLICY", "PAGE_HEADERS"]

# Nothing but this origin: scripts, styles, requests, form targets, frames.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
