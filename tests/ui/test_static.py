"""The gateway serves the UI's files (and nothing else from its package) without a token."""

from __future__ import annotations

from fastapi.testclient import TestClient

from gateway.app import create_app
from shared.config import Settings


def client() -> TestClient:
    # no lifespan: serving files needs neither the database nor the bus
    return TestClient(create_app(Settings()))


def test_page_at_root_with_its_policy() -> None:
    answer = client().get("/")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert '<script type="module" src="/ui/app.js">' in answer.text


def test_modules_and_styles_served_with_their_types() -> None:
    http = client()
    for path, kind in [
        ("/ui/app.js", "text/javascript"),
        ("/ui/api.js", "text/javascript"),
        ("/ui/views/progress.js", "text/javascript"),
        ("/ui/style.css", "text/css"),
    ]:
        answer = http.get(path)
        assert answer.status_code == 200, path
        assert answer.headers["content-type"].startswith(kind), path
        assert answer.headers["x-content-type-options"] == "nosniff"


def test_nothing_outside_the_ui_folder() -> None:
    http = client()
    for path in [
        "/ui/../routes/ui.py",
        "/ui/%2e%2e/app.py",
        "/ui/..%2fapp.py",
        "/ui/views/../../app.py",
        "/ui/missing.js",
        "/ui/",
    ]:
        answer = http.get(path)
        assert answer.status_code == 404, path
        assert answer.json()["error"]["code"] == "not_found"


def test_favicon_served() -> None:
    answer = client().get("/favicon.ico")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("image/svg+xml")
    assert answer.content.startswith(b"<svg")


def test_text_files_gzip_compressed_when_accepted() -> None:
    http = client()
    for path in ("/", "/ui/app.js", "/ui/style.css"):
        plain = http.get(path, headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in plain.headers, path
        packed = http.get(path, headers={"Accept-Encoding": "gzip, deflate"})
        assert packed.headers["content-encoding"] == "gzip", path
        assert packed.headers["vary"] == "Accept-Encoding", path
        assert packed.content == plain.content, path  # the client decompresses it
        assert int(packed.headers["content-length"]) < len(plain.content), path
