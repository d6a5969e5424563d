"""The console's web application (Flask): its templates (jinja2, autoescaped, StrictUndefined),
its guards and its error pages. The routes live in trainstack.ui.routes.

Safe by default: GET and HEAD only (no route changes anything); a strict Content-Security-Policy
(no inline script or style, nothing from another origin); bound to loopback, it answers only to
a loopback Host (a web page cannot reach it by DNS rebinding); with a token, every request must
carry it (the printed link's `?token=` once, then a same-site, HttpOnly cookie)."""

from __future__ import annotations

import hmac
import logging
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

import jinja2
from flask import Flask, Response, redirect, render_template, request
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response as BaseResponse

from trainstack.errors import NotFoundError, UserError
from trainstack.registry import RegistryError
from trainstack.ui.config import UiConfig as UiConfig

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
TOKEN_COOKIE = "trainstack_ui_token"


def token_cookie() -> str:
    """The token cookie's name for the port this request reached: a browser sends a host's
    cookies to every port of it, so two consoles on one machine would otherwise each receive the
    other's token (and overwrite it)."""
    return f"{TOKEN_COOKIE}_{request.environ.get('SERVER_PORT', '0')}"


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_log = logging.getLogger("trainstack.ui")


@dataclass(frozen=True)
class ErrorPage:
    title: str
    message: str
    hint: str


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host.partition("]")[0] + "]"
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _target_host() -> str:
    """The host a request is for. An absolute-form target (`GET http://host/`) names its own,
    and an origin server uses that and ignores the Host header (RFC 9112, section 3.2.2)."""
    target = str(request.environ.get("REQUEST_URI", ""))
    if not target or target.startswith("/"):
        return request.host
    return urlsplit(target).netloc  # none (a target without an authority) is no loopback name


def create_app(config: UiConfig) -> Flask:
    app = Flask(__name__, static_folder="static", template_folder="templates")
    app.jinja_options = {
        **app.jinja_options,
        "autoescape": True,
        "undefined": jinja2.StrictUndefined,
    }
    app.config["UI"] = config

    @app.before_request
    def guard() -> BaseResponse | None:
        if request.method not in ("GET", "HEAD"):
            return _error(405, "read only", f"{request.method} is not served here", "")
        host = _target_host()
        if config.loopback and _host_name(host) not in LOOPBACK_NAMES:
            return _error(
                403,
                "not this host",
                f"this console answers to localhost only, not to {host!r}",
                "open it as http://127.0.0.1:PORT/",
            )
        if config.token is None:
            return None
        given = request.args.get("token")
        if given is not None and hmac.compare_digest(given.encode(), config.token.encode()):
            rest = [(k, v) for k, v in request.args.items(multi=True) if k != "token"]
            target = request.path + ("?" + urlencode(rest) if rest else "")
            done = redirect(target, code=303)
            done.set_cookie(
                token_cookie(), config.token, httponly=True, samesite="Strict", secure=config.tls
            )
            return done
        held = request.cookies.get(token_cookie(), "")
        if hmac.compare_digest(held.encode(), config.token.encode()):
            return None
        return _error(
            401,
            "token needed",
            "this console needs the token `trainstack ui` printed when it started",
            "open the link it printed (…/?token=…)",
        )

    @app.after_request
    def headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Cross-Origin-Opener-Policy"] = "same-origin"
        response.headers["Cross-Origin-Resource-Policy"] = "same-origin"
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    @app.context_processor
    def refresh() -> dict[str, str]:
        # The page itself, asked again: a link, not a script or a timed reload, so it works
        # without JavaScript and never takes a page away while it is being read.
        # One leading slash, quoted again: `//host` or `/\host` would be another site's address.
        path = quote("/" + request.path.lstrip("/\\"), safe="/:@!$&'()*+,;=-._~")
        query = request.query_string.decode("latin-1")
        return {"refresh_href": path + ("?" + query if query else "")}

    @app.errorhandler(NotFoundError)
    def not_found(err: NotFoundError) -> Response:
        return _error(404, "not found", err.message, err.hint or "")

    @app.errorhandler(RegistryError)
    def registry(err: RegistryError) -> Response:
        return _error(503, "run registry unreadable", err.message, err.hint or "")

    @app.errorhandler(UserError)
    def user(err: UserError) -> Response:
        return _error(400, "cannot show this", err.message, err.hint or "")

    @app.errorhandler(HTTPException)
    def http(err: HTTPException) -> Response:
        code = err.code or 500
        return _error(code, err.name.lower(), err.description or "", "")

    @app.errorhandler(Exception)
    def internal(err: Exception) -> Response:
        _log.exception("trainstack ui: %s %s failed", request.method, request.path)
        return _error(
            500,
            "internal error",
            f"this page failed ({type(err).__name__}); the console's log has the details",
            "",
        )

    from trainstack.ui.routes import register

    register(app, config)
    return app


def _error(code: int, title: str, message: str, hint: str) -> Response:
    html = render_template("error.html.j2", page=ErrorPage(title, message, hint))
    return Response(html, status=code, mimetype="text/html")
