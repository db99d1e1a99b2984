"""The HTML page in a real browser: headless Chromium takes a screenshot and dumps the DOM it built.

    .venv/bin/python -m pytest tests/test_leaderboard_html.py -q
    LEVELFIELD_REQUIRE_CHROMIUM=1 .venv/bin/python -m pytest tests/test_leaderboard_html.py   # CI: absent = fail

Needs the Debian package `chromium` (apt-get install -y chromium). Without it
the tests skip, unless LEVELFIELD_REQUIRE_CHROMIUM is set, which makes a
missing browser a failure. The page is loaded from a file:// URL; its
Content-Security-Policy forbids every fetch, so it renders exactly as offline.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_leaderboard import JAX_S, document, write_tree

from levelfield.tools.leaderboard import render

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WINDOW = (1400, 1800)
TIMEOUT_S = 120


@pytest.fixture(scope="module")
def browser() -> str:
    if CHROMIUM is None:
        if os.environ.get("LEVELFIELD_REQUIRE_CHROMIUM"):
            pytest.fail(
                "LEVELFIELD_REQUIRE_CHROMIUM is set but no chromium is on PATH "
                "(install the Debian package: apt-get install -y chromium)"
            )
        pytest.skip(
            "chromium is not installed (Debian package `chromium`); "
            "set LEVELFIELD_REQUIRE_CHROMIUM=1 to make this a failure"
        )
    return CHROMIUM


def chromium(browser: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


class Elements(HTMLParser):
    """Counts start tags and collects ids of the DOM Chromium serialised."""

    def __init__(self):
        super().__init__()
        self.tags: dict[str, int] = {}
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self.ids.update(value for name, value in attrs if name == "id" and value)


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("page")
    doc = document(
        write_tree(root / "acme"),
        write_tree(
            root / "globex",
            org="globex",
            name='Globex <img src=x onerror="alert(1)">',
            training={"jax": JAX_S},
            inference={"jax": {"offline": [7000.0, 7100.0, 6900.0], "server": [900.0, 910.0, 890.0]}},
        ),
    )
    path = root / "leaderboard.html"
    path.write_text(render(doc, "html"), encoding="utf-8")
    return path, doc


def test_screenshot_is_produced(browser, page, tmp_path):
    path, _ = page
    shot = tmp_path / "leaderboard.png"
    result = chromium(
        browser, tmp_path, f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}", path.as_uri()
    )
    assert shot.is_file(), result.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    assert (width, height) == WINDOW
    assert len(data) > 20_000  # a blank page compresses to a few KB; tables and charts do not


def test_tables_and_charts_are_in_the_dom(browser, page, tmp_path):
    path, doc = page
    result = chromium(browser, tmp_path, "--dump-dom", path.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    dom = Elements()
    dom.feed(result.stdout)
    anchor = "ctr-dlrm-closed-1_0"
    assert {f"training-{anchor}", f"inference-{anchor}", f"welch-{anchor}", "submissions"} <= dom.ids
    assert {r["id"] for r in doc["training"] + doc["inference"]} <= dom.ids  # every row, by its stable id
    assert dom.tags["svg"] == 4  # time to target; Server, Offline and SingleStream
    assert "script" not in dom.tags and "img" not in dom.tags  # the hostile system name stayed text
    assert 'Globex &lt;img src=x onerror="alert(1)"&gt;' in result.stdout
