"""The web UI: static files (no build step) under /ui/, and its page at /."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

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


@router.get("/")
async def index() -> FileResponse:
    return FileResponse(
        UI_DIR / "index.html", media_type=MEDIA_TYPES[".html"], headers=PAGE_HEADERS
    )


@router.get("/ui/{path:path}")
async def asset(path: str) -> FileResponse:
    target = (UI_DIR / path).resolve()
    if (
        not target.is_relative_to(UI_DIR)
        or not target.is_file()
        or target.suffix not in MEDIA_TYPES
    ):
        raise ApiError(404, "not_found", f"no UI file {path}", hint="open / for the web UI")
    return FileResponse(target, media_type=MEDIA_TYPES[target.suffix], headers=HEADERS)
