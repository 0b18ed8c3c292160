"""The web UI: static files (no build step) under /ui/, gzip-compressed for a browser that
accepts it, its page at / and its icon at /favicon.ico; the API reference
(Swagger UI at /docs) from files the gateway serves itself under /docs/assets/.

Swagger UI comes from the fastapi-offline package's copy of its distribution files, so the
reference page loads nothing from another origin (no CDN). There is no /redoc: ReDoc's page
loads its logo from its vendor's CDN whatever it is given."""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.metadata
import importlib.util
import re
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, Response

from gateway.errors import ApiError
from gateway.routing import PrefixedRoute

router = APIRouter(route_class=PrefixedRoute, include_in_schema=False)

UI_DIR = (Path(__file__).resolve().parent.parent / "ui").resolve()
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
# The page runs only its own files and talks only to its own origin (REST, SSE, WebSocket).
PAGE_HEADERS = {
    **HEADERS,
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        " connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "Referrer-Policy": "no-referrer",
}


# Text files are sent gzip-compressed to a browser that accepts it (a third of their size).
COMPRESSED = {".html", ".js", ".css", ".svg"}


@functools.lru_cache(maxsize=128)
def _gzipped(path: Path, mtime_ns: int) -> bytes:
    return gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)


def _ui_file(request: Request, target: Path, headers: dict[str, str]) -> Response:
    media_type = MEDIA_TYPES[target.suffix]
    if target.suffix not in COMPRESSED:
        return FileResponse(target, media_type=media_type, headers=headers)
    vary = {**headers, "Vary": "Accept-Encoding"}
    if "gzip" not in request.headers.get("accept-encoding", ""):
        return FileResponse(target, media_type=media_type, headers=vary)
    body = _gzipped(target, target.stat().st_mtime_ns)
    return Response(body, media_type=media_type, headers={**vary, "Content-Encoding": "gzip"})


@router.get("/")
async def index(request: Request) -> Response:
    return _ui_file(request, UI_DIR / "index.html", PAGE_HEADERS)


@router.get("/favicon.ico")
async def favicon(request: Request) -> Response:
    return _ui_file(request, UI_DIR / "favicon.svg", HEADERS)


@router.get("/ui/{path:path}")
async def asset(path: str, request: Request) -> Response:
    target = (UI_DIR / path).resolve()
    if (
        not target.is_relative_to(UI_DIR)
        or not target.is_file()
        or target.suffix not in MEDIA_TYPES
    ):
        raise ApiError(404, "not_found", f"no UI file {path}", hint="open / for the web UI")
    return _ui_file(request, target, HEADERS)


def _docs_dir() -> Path:
    # Found without importing the package (its module builds a FastAPI app we do not use).
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("fastapi-offline is not installed (it carries Swagger UI and ReDoc)")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


DOCS_DIR = _docs_dir()
DOCS_ASSETS = {
    "swagger-ui-bundle.js": ".js",
    "swagger-ui.css": ".css",
    "favicon.png": ".png",
}
# The asset URLs change with the package, so a browser may keep the files a day.
DOCS_VERSION = importlib.metadata.version("fastapi-offline")
ASSET_HEADERS = {"Cache-Control": "public, max-age=86400", "X-Content-Type-Options": "nosniff"}
_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def _docs_page(html: str) -> HTMLResponse:
    """The reference page with a policy that lets it load only the gateway's own files: its one
    inline script (Swagger UI's start) by hash, inline styles (Swagger UI sets them)."""
    scripts = " ".join(
        [
            "'self'",
            *(
                f"'sha256-{base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()}'"
                for script in _INLINE_SCRIPT.findall(html)
            ),
        ]
    )
    policy = (
        f"default-src 'self'; script-src {scripts}; style-src 'self' 'unsafe-inline';"
        " img-src 'self' data:; font-src 'self' data:;"
        " connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )
    return HTMLResponse(
        html,
        headers={
            **HEADERS,
            "Content-Security-Policy": policy,
            "Referrer-Policy": "no-referrer",
        },
    )


def _asset_url(request: Request, name: str) -> str:
    return f"{request.scope.get('root_path', '')}/docs/assets/{name}?v={DOCS_VERSION}"


@router.get("/docs")
async def swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    page = get_swagger_ui_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{request.app.title} - Swagger UI",
        swagger_js_url=_asset_url(request, "swagger-ui-bundle.js"),
        swagger_css_url=_asset_url(request, "swagger-ui.css"),
        swagger_favicon_url=_asset_url(request, "favicon.png"),
        oauth2_redirect_url=None,
        # No online validator badge (it would send the document's URL to swagger.io).
        swagger_ui_parameters={**(request.app.swagger_ui_parameters or {}), "validatorUrl": None},
    )
    return _docs_page(bytes(page.body).decode())


@router.get("/docs/assets/{name}")
async def docs_asset(name: str) -> FileResponse:
    suffix = DOCS_ASSETS.get(name)
    if suffix is None:
        raise ApiError(404, "not_found", f"no API reference file {name}", hint="open /docs")
    return FileResponse(DOCS_DIR / name, media_type=MEDIA_TYPES[suffix], headers=ASSET_HEADERS)
