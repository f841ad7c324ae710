"""Who is looking: a server-side session per sign-in, sign-in and sign-out, error pages.

The console authorizes exactly as the API does. Signing in with a token opens
a session (`registry.store.sessions`): the cookie holds an opaque random id
(HTTP-only, `SameSite=Strict`, scoped to `/ui`, `Secure` when the page was
served over HTTPS: directly, or behind a proxy that says so in
`X-Forwarded-Proto` when `Settings.trust_proxy` is on), never the token. The
database keeps the id's hash and the token's hash; each console request
(`authenticate`, the console's `before_request` hook) hands the token's hash
to the API's own `principal()`, so scopes, open reads, revocation and the
bootstrap token work as they do for the API. Sessions end at sign-out, after
`SESSION_HOURS`, or when their token is revoked.

Every POST form is refused unless the browser says the request comes from
this site: `Sec-Fetch-Site` `same-origin` (or `none`, typed by the user), or,
from a browser that sends no `Sec-Fetch-Site`, an `Origin` naming this host;
there `Origin: null` and a form with neither header are refused. With the
SameSite cookie, that is the CSRF defence of sign-in and sign-out. The forms
that change the registry (approving or rejecting a version held for review)
also carry a token bound to the session (`csrf_token`: a hash of the session
id, which only the session's own pages know) and need the session itself: a
request without the cookie, or with another session's token, is refused
(`check_csrf`). Redirects after sign-in go to console paths only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import Annotated, Any, Final
from urllib.parse import urlsplit

from litestar import Request, Response, get, post
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.params import Parameter
from litestar.response import Redirect, Template

from registry import __version__, store
from registry.api.auth import Principal
from registry.api.problems import PROBLEMS, ApiError
from registry.api.services import SESSION_TOKEN, principal, services
from registry.console.headers import PAGE_HEADERS
from registry.store.sessions import close_session, open_session, session_token

__all__ = [
    "COOKIE",
    "HANDLERS",
    "authenticate",
    "check_csrf",
    "csrf_token",
    "on_api_error",
    "on_http_exception",
    "page",
    "reader_or_login",
]

COOKIE = "registry_console_session"
PREFIX = "/ui"
SESSION_HOURS: Final = 12
_SAFE_SITES = {"same-origin", "none"}


# -- the session, from the cookie to the API's principal() -----------------------------


def _set_bearer(request: Request[Any, Any, Any], secret: str) -> bool:
    """Make `secret` the request's bearer token; False when it cannot be a header value."""
    try:
        value = b"Bearer " + secret.encode("latin-1")
    except UnicodeEncodeError:
        return False
    headers = [(k, v) for k, v in request.scope["headers"] if k != b"authorization"]
    request.scope["headers"] = [*headers, (b"authorization", value)]
    state = request.scope.setdefault("state", {})
    state.pop("principal", None)  # principal() caches its answer per request
    return True


def _has_authorization(request: Request[Any, Any, Any]) -> bool:
    return any(key == b"authorization" for key, _ in request.scope["headers"])


async def authenticate(request: Request[Any, Any, Any]) -> None:
    """The console's `before_request` hook (it replaces the API's JSON-body check here:
    the console's forms are not JSON). POSTs from another site are refused; the
    session's token, when the cookie names a live session, is the caller's."""
    if request.method == "POST":
        _refuse_cross_site(request)
    session = request.cookies.get(COOKIE)
    if session and not _has_authorization(request):
        svc = services(request)
        found = await session_token(svc.database, store.hash_token(session), svc.clock())
        if found is not None:
            request.scope.setdefault("state", {})[SESSION_TOKEN] = found


def _refuse_cross_site(request: Request[Any, Any, Any]) -> None:
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        # The browser sets it, whatever the page says: enough alone. (The console's own
        # pages, served with `Referrer-Policy: no-referrer`, send `Origin: null` with
        # their forms, and a proxy may rewrite `Host`.)
        if site not in _SAFE_SITES:
            raise ApiError("forbidden", f"a console form was sent from another site ({site})")
        return
    origin = request.headers.get("origin")
    if origin is None:
        raise ApiError("forbidden", "a console form must come from a browser that names its origin")
    host = request.headers.get("host", "")
    if origin == "null" or urlsplit(origin).netloc != host:
        raise ApiError("forbidden", f"a console form was sent from {origin}")


def _https(request: Request[Any, Any, Any]) -> bool:
    """Served over HTTPS: directly, or behind a proxy trusted to say so."""
    if request.url.scheme == "https":
        return True
    if not services(request).settings.trust_proxy:
        return False
    forwarded = request.headers.get("x-forwarded-proto", "")
    return forwarded.split(",")[0].strip().lower() == "https"


async def reader_or_login(request: Request[Any, Any, Any]) -> Principal:
    """The caller; anonymous callers are sent to sign in unless the server allows open reads."""
    found = await principal(request)
    if found.token_id is None and not services(request).settings.open_reads:
        raise ApiError("unauthenticated", "sign in with a token to see the registry")
    return found


# -- the forms that write ------------------------------------------------------------


def csrf_token(request: Request[Any, Any, Any]) -> str | None:
    """The token a write form of this session carries; None without a session."""
    session = request.cookies.get(COOKIE)
    if not session:
        return None
    return hashlib.sha256(b"registry-console-csrf\0" + session.encode()).hexdigest()


def check_csrf(request: Request[Any, Any, Any], sent: Any) -> None:
    """403 unless the form came from a page of this request's session (signed in
    through the console: a bearer token alone never writes through a form)."""
    expected = csrf_token(request)
    if SESSION_TOKEN not in request.scope.get("state", {}) or expected is None:
        raise ApiError("forbidden", "a console form that writes needs a console session")
    if not isinstance(sent, str) or not hmac.compare_digest(sent, expected):
        raise ApiError(
            "forbidden", "this form did not come from this session's page: reload it and retry"
        )


# -- pages ------------------------------------------------------------------------------


def page(
    request: Request[Any, Any, Any],
    template: str,
    status_code: int = 200,
    **context: Any,
) -> Template:
    """A console page: `template` with what every page shows (who is signed in)."""
    state = request.scope.get("state", {})
    known = state.get("principal")
    return Template(
        template_name=template,
        context={
            "who": known if isinstance(known, Principal) else None,
            "open_reads": services(request).settings.open_reads,
            "version": __version__,
            "path": request.url.path,
            **context,
        },
        status_code=status_code,
    )


def _safe_next(value: Any) -> str:
    """A path inside the console to go back to after signing in (never another site)."""
    text = str(value or "")
    parts = urlsplit(text)
    if parts.scheme or parts.netloc or not text.startswith(PREFIX) or "\\" in text:
        return PREFIX + "/"
    return PREFIX + "/" if text == PREFIX else text


@get("/login", name="console-login-form")
async def login_form(
    request: Request[Any, Any, Any],
    next: Annotated[str, Parameter(max_length=2000)] = PREFIX + "/",
) -> Template:
    await principal(request)
    return page(request, "login.html.j2", next=_safe_next(next), message=None)


@post("/login", name="console-login", status_code=303)
async def login(request: Request[Any, Any, Any]) -> Response[Any]:
    form = await request.form()
    secret = str(form.get("token") or "").strip()
    target = _safe_next(form.get("next"))
    if not secret or not _set_bearer(request, secret):
        return page(
            request,
            "login.html.j2",
            status_code=422,
            next=target,
            message="Enter a token: the secret `registry token create` printed.",
        )
    try:
        await principal(request)
    except ApiError as exc:
        return _login_refused(request, exc.detail, target, clear=True)
    svc = services(request)
    session = secrets.token_urlsafe(32)
    now = svc.clock()
    await open_session(
        svc.database,
        store.hash_token(session),
        store.hash_token(secret),
        now + timedelta(hours=SESSION_HOURS),
        now=now,
    )
    response: Response[Any] = Redirect(target, status_code=303)
    response.set_cookie(
        COOKIE,
        session,
        path=PREFIX,
        max_age=SESSION_HOURS * 3600,
        httponly=True,
        samesite="strict",
        secure=_https(request),
    )
    return response


def _login_refused(
    request: Request[Any, Any, Any], detail: str, target: str, *, clear: bool
) -> Template:
    """The sign-in page, 401; `clear`: the token given was refused, forget the cookie."""
    request.scope.setdefault("state", {})["principal"] = Principal(token_id=None)
    response = page(request, "login.html.j2", status_code=401, next=target, message=detail)
    if clear:
        response.delete_cookie(COOKIE, path=PREFIX)
    return response


@post("/logout", name="console-logout", status_code=303)
async def logout(request: Request[Any, Any, Any]) -> Response[Any]:
    session = request.cookies.get(COOKIE)
    if session:
        await close_session(services(request).database, store.hash_token(session))
    response: Response[Any] = Redirect(PREFIX + "/login", status_code=303)
    response.delete_cookie(COOKIE, path=PREFIX)
    return response


# -- errors as pages ------------------------------------------------------------------


def _error_page(
    request: Request[Any, Any, Any], status: int, title: str, detail: str
) -> Response[Any]:
    """The page of a refusal, with the headers of every page (registry.console.headers)."""
    response: Response[Any]
    if status == 401:
        query = request.url.query
        target = _safe_next(request.url.path + (f"?{query}" if query else ""))
        response = _login_refused(request, detail, target, clear=bool(request.cookies.get(COOKIE)))
    else:
        response = page(request, "error.html.j2", status_code=status, title=title, detail=detail)
    response.headers.update({**PAGE_HEADERS, "Cache-Control": "no-store"})
    return response


def on_api_error(request: Request[Any, Any, Any], exc: ApiError) -> Response[Any]:
    return _error_page(request, exc.status, PROBLEMS[exc.code].title, exc.detail)


def on_http_exception(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    if isinstance(exc, NotFoundException):
        return _error_page(request, 404, "Not found", f"nothing at {request.url.path}")
    if isinstance(exc, ValidationException):
        extra = exc.extra if isinstance(exc.extra, list) else []
        detail = "; ".join(
            f"{e.get('key')}: {e.get('message')}" for e in extra if isinstance(e, dict)
        )
        return _error_page(request, 400, "The request is malformed", detail or exc.detail)
    return _error_page(request, exc.status_code, "The request was refused", exc.detail)


HANDLERS = [login_form, login, logout]
