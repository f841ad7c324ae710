"""The web console, served by the service under `/ui/`: server-rendered pages, no build step.

    Litestar(route_handlers=[..., console_router()], template_config=template_config())

Pages (Jinja2 templates through Litestar's template support, `templates/`):
namespaces, a namespace, a tool's timeline (kept live by htmx following the
toolset's long-poll), a diff between two versions, digest lookup and listing
verification, plan, the audit log, and a namespace's reviews (`reviews`: the
versions its review policy holds, and the forms that approve or reject them).
The only script is htmx, vendored under `static/` with its licence and version;
every asset is served from here, and the Content-Security-Policy lets a page
reach nothing else.

Authorization is the API's (`session`); the only writes are the review decisions,
through the API's own handlers, from forms bound to the session (CSRF). The
console's routes stay out of the API's OpenAPI document.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import msgspec
from jinja2 import Environment
from litestar import Response, Router
from litestar.datastructures import CacheControlHeader, ResponseHeader
from litestar.exceptions import HTTPException
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig
from markupsafe import Markup, escape

from registry.api.problems import ApiError
from registry.console import browse, forms, reviews, session
from registry.console.headers import CONTENT_SECURITY_POLICY, PAGE_HEADERS
from registry.console.views import evidence, line_key, pretty, shown

__all__ = ["CONTENT_SECURITY_POLICY", "HTMX", "console_router", "template_config"]

HERE: Final = Path(__file__).parent
HTMX: Final = "htmx-2.0.11.min.js"  # static/; see static/VENDORED.md


def _with_page_headers(response: Response[Any]) -> Response[Any]:
    response.headers.update(PAGE_HEADERS)
    return response


def console_router() -> Router:
    static = create_static_files_router(
        path="/static",
        directories=[HERE / "static"],
        name="console-static",
        cache_control=CacheControlHeader(public=True, max_age=3600),
        include_in_schema=False,
        after_request=_with_page_headers,  # it takes no response_headers
    )
    return Router(
        path=session.PREFIX,
        route_handlers=[
            *session.HANDLERS,
            *reviews.HANDLERS,
            *browse.HANDLERS,
            *forms.HANDLERS,
            static,
        ],
        before_request=session.authenticate,
        exception_handlers={
            ApiError: session.on_api_error,
            HTTPException: session.on_http_exception,
        },
        response_headers=[ResponseHeader(name=k, value=v) for k, v in PAGE_HEADERS.items()],
        # Pages show what a token may read: no cache keeps them (static assets say otherwise).
        cache_control=CacheControlHeader(no_store=True),
        include_in_schema=False,
    )


def template_config() -> TemplateConfig[JinjaTemplateEngine]:
    return TemplateConfig(
        directory=HERE / "templates",
        engine=JinjaTemplateEngine,
        engine_callback=_configure,
    )


def _configure(engine: JinjaTemplateEngine) -> None:
    environment: Environment = engine.engine
    environment.auto_reload = False  # templates ship with the package; never re-read
    environment.trim_blocks = True
    environment.lstrip_blocks = True
    environment.filters.update(
        {
            "when": _when,
            "pretty": pretty,
            "compact": _compact,
            "short": _short,
            "shown": shown,
            "evidence": evidence,
            "line_key": line_key,
            "breakable": _breakable,
        }
    )
    environment.globals.update({"htmx": HTMX})


def _when(moment: datetime | str | None) -> str:
    """A time as the console prints it, in UTC to the second."""
    if moment is None:
        return ""
    if isinstance(moment, str):
        try:
            parsed = datetime.fromisoformat(moment.replace("Z", "+00:00"))
        except ValueError:
            return moment
        moment = parsed
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _breakable(path: str | None) -> Markup:
    """A JSON Pointer that wraps after its slashes rather than inside a name (with
    `code.path`'s CSS, a name longer than the line is the only thing broken)."""
    return Markup("/<wbr>").join(escape(part) for part in (path or "").split("/"))


def _compact(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _short(digest: str | None) -> str:
    """`sha256:` and the first 12 hex digits (the full digest is shown where it matters)."""
    if not digest:
        return ""
    return digest[:19] + "…"
