"""The HTML page in a real browser: headless Chromium takes a screenshot, dumps the DOM it built, and measures.

    .venv/bin/python -m pytest tests/test_leaderboard_html.py -q
    LEVELFIELD_REQUIRE_CHROMIUM=1 .venv/bin/python -m pytest tests/test_leaderboard_html.py   # CI: absent = fail

Needs the Debian package `chromium` (apt-get install -y chromium). Without it
the tests skip, unless LEVELFIELD_REQUIRE_CHROMIUM is set, which makes a
missing browser a failure. The page is loaded from a file:// URL; its
Content-Security-Policy forbids every fetch, so it renders exactly as offline.

Readability is measured in the browser, on a 1,300-pixel-wide window: a copy
of the page gets a script (its CSP widened for inline scripts only) that
writes into the DOM how wide the page is against its window, closed and with
every row's details open, which element would scroll sideways, and the text
and box of every bar's and point's label; `--dump-dom` returns it. Pages:
synthetic trees (two systems; one with costs per sample), a demo-shaped tree
(the demo's three frameworks, one training run each, LoadGen's four
scenarios, judged as the demo profile), and submissions/example where present.
A planted page (a wide table, a label without its framework) proves the
measurement fails.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from test_leaderboard import JAX_S, clean_check, document, write_tree

from conftest import EXAMPLE
from levelfield.tools.leaderboard import build, render
from levelfield.tools.leaderboard.collect import collect
from levelfield.tools.leaderboard.document import build_document
from levelfield.tools.leaderboard.render_html import CSP

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PAGE_WIDTH_PX = 1300  # the page must fit this window without scrolling sideways (issue 37)
WINDOW = (PAGE_WIDTH_PX, 1800)
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
    """The whole window is drawn (a 1,300 x 1,800 PNG) and holds more than a blank page."""
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


# -- readable at 1,300 px: measured in the browser -------------------------------------------------------

# Runs after the page has laid out; writes its findings into <pre id="measure"> for --dump-dom.
MEASURE = """<pre id="measure" hidden></pre><script>
(function () {
  const root = document.documentElement;
  function sideways() {
    const found = [];
    if (root.scrollWidth > root.clientWidth) found.push("page " + root.scrollWidth + " > " + root.clientWidth);
    for (const el of document.querySelectorAll("body *")) {
      if (el.closest("svg") && el.tagName.toLowerCase() !== "svg") continue;
      const folded = el.closest("details");  // a closed row's details: laid out, never shown
      if (folded && !folded.open && !el.closest("summary")) continue;
      const style = getComputedStyle(el);
      const box = el.getBoundingClientRect();
      const name = el.tagName.toLowerCase() + (el.id ? "#" + el.id : "");
      if (["auto", "scroll"].includes(style.overflowX) && el.scrollWidth > el.clientWidth + 1) {
        found.push(name + " scrolls " + el.scrollWidth + " > " + el.clientWidth);
      }
      if (box.width > 0 && box.right > root.clientWidth + 0.5) found.push(name + " ends at " + box.right);
    }
    return found;
  }
  const labels = [];
  for (const g of document.querySelectorAll("svg g.bar, svg g.point")) {
    const chart = g.closest("svg").getBoundingClientRect();
    const label = g.querySelector("text.label");
    const box = label ? label.getBoundingClientRect() : null;
    labels.push({
      framework: g.dataset.framework,
      text: label ? label.textContent : "",
      inside: !!box && box.width > 0 && box.left >= chart.left - 0.5 && box.right <= chart.right + 0.5,
    });
  }
  const closed = sideways();
  const details = document.querySelectorAll("details");
  details.forEach((d) => { d.open = true; });
  const result = {
    inner_width: window.innerWidth, closed: closed, open: sideways(), details: details.length, labels: labels,
    legends: [...document.querySelectorAll("svg g.legend-entry")].map((g) => g.dataset.framework),
  };
  document.getElementById("measure").textContent = JSON.stringify(result);
})();
</script>"""


def measure(browser: str, tmp_path: Path, page: Path) -> dict:
    """What MEASURE finds in `page` on a PAGE_WIDTH_PX-wide window."""
    text = page.read_text(encoding="utf-8")
    assert f'content="{CSP}"' in text
    probe = tmp_path / f"{page.stem}-measured.html"
    text = text.replace(f'content="{CSP}"', f"content=\"{CSP}; script-src 'unsafe-inline'\"")
    probe.write_text(text.replace("</body>", MEASURE + "\n</body>"), encoding="utf-8")
    result = chromium(browser, tmp_path, "--dump-dom", f"--window-size={PAGE_WIDTH_PX},900", probe.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'<pre id="measure"[^>]*>(.*?)</pre>', result.stdout, re.S)
    assert found and found[1], "the measuring script did not run: " + result.stderr[-2000:]
    return json.loads(html.unescape(found[1]))


def unreadable(measured: dict) -> list[str]:
    """Every way the measured page fails a reader at PAGE_WIDTH_PX: sideways scrolling, closed or with every
    row's details open; a bar or point whose label does not start with its framework or leaves its chart."""
    problems = [f"closed: {p}" for p in measured["closed"]] + [f"details open: {p}" for p in measured["open"]]
    for label in measured["labels"]:
        if not label["text"].startswith(label["framework"]) or not label["inside"]:
            problems.append(
                f"label {label['text']!r} of a {label['framework']} bar (inside its chart: {label['inside']})"
            )
    return problems


def assert_readable(measured: dict, frameworks: set[str]) -> None:
    assert measured["inner_width"] == PAGE_WIDTH_PX
    problems = unreadable(measured)
    assert problems == [], "\n".join(problems)
    assert {label["framework"] for label in measured["labels"]} == frameworks  # every framework has its bars
    assert set(measured["legends"]) == frameworks and measured["details"] > 0


def test_the_synthetic_page_fits_and_labels_every_bar(browser, page, tmp_path):
    _, doc = page
    measured = measure(browser, tmp_path, page[0])
    assert_readable(measured, {r["framework"] for r in doc["training"] + doc["inference"]})
    # One bar per training row and per inference row's scenario (time to target; Server, Offline, SingleStream).
    assert len(measured["labels"]) == len(doc["training"]) + sum(len(r["scenarios"]) for r in doc["inference"])
    # Two systems on the page: a chart holding both names each bar's system on its second line.
    assert 'class="system">acme/Acme box</text>' in page[0].read_text()


DEMO_SYSTEM = "levelfield demo machine: AMD EPYC 7B13 64-Core Processor (2 vCPU, 24 GiB)"
FRAMEWORKS = ("pytorch", "tensorflow", "jax")


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory) -> Path:
    """A tree shaped as `levelfield demo` leaves it: one org and system, the three frameworks with one training
    run each, LoadGen's four scenarios in three repeats each, judged as the demo profile."""
    root = tmp_path_factory.mktemp("demo")
    scenarios = {
        "singlestream": [0.31, 0.30, 0.32],
        "multistream": [2.4, 2.5, 2.3],
        "server": [480.0, 490.0, 470.0],
        "offline": [5200.0, 5150.0, 5300.0],
    }
    tree = write_tree(
        root / "submission",
        org="demo",
        system="demo-box",
        name=DEMO_SYSTEM,
        price=None,
        training={fw: [seconds] for fw, seconds in zip(FRAMEWORKS, (11.5, 14.2, 9.8), strict=True)},
        inference={
            fw: {s: [v * (1 + i / 10) for v in values] for s, values in scenarios.items()}
            for i, fw in enumerate(FRAMEWORKS)
        },
    )
    doc = build_document(collect([tree], check=clean_check, profile="demo"))
    assert doc["profile"] == "demo" and len(doc["inference"][0]["scenarios"]) == 4
    path = root / "leaderboard.html"
    path.write_text(render(doc, "html"), encoding="utf-8")
    return path


def test_the_demo_page_fits_and_labels_every_bar(browser, demo_page, tmp_path):
    measured = measure(browser, tmp_path, demo_page)
    assert_readable(measured, set(FRAMEWORKS))
    assert len(measured["labels"]) == 5 * 3  # time to target and four scenarios, three frameworks each
    assert "not-results" in demo_page.read_text()


@pytest.mark.skipif(not (EXAMPLE / "MANIFEST").is_file(), reason=f"needs the example submission at {EXAMPLE}")
def test_the_example_page_fits_and_labels_every_bar(browser, tmp_path):
    path = tmp_path / "example.html"
    path.write_text(render(build([EXAMPLE]), "html"), encoding="utf-8")
    assert_readable(measure(browser, tmp_path, path), set(FRAMEWORKS))


def test_costs_per_sample_are_charted_against_throughput(browser, tmp_path):
    """Rows carrying energy and price per sample (metering, issue 37) get a scatter per field and kind; the
    points are labelled like the bars, with what differs (here processes, precision and the system)."""
    doc = document(
        write_tree(tmp_path / "acme", training={"jax": JAX_S, "pytorch": JAX_S}, processes=(2, 1), throughput=True),
        write_tree(tmp_path / "globex", org="globex", training={"jax": JAX_S}, processes=(1, 1), throughput=True),
    )
    for i, row in enumerate(doc["training"]):
        row.update(energy_j_per_1000_samples=40.0 + i, price_usd_per_million_samples=0.5 + i / 10, precision="fp32")
    doc["training"][0]["precision"] = "bf16"
    for row in doc["inference"]:
        row["scenarios"]["offline"]["energy_j_per_1000_samples"] = 12.5
    page = tmp_path / "costs.html"
    page.write_text(render(doc, "html"), encoding="utf-8")
    text = page.read_text()
    assert text.count('<svg class="chart scatter"') == 3  # training energy, training price, Offline energy
    measured = measure(browser, tmp_path, page)
    assert_readable(measured, {"jax", "pytorch"})
    points = [label["text"] for label in measured["labels"] if " (" in label["text"]]
    assert any(text.startswith("jax · 2 x 1 node · bf16 (acme/") for text in points), measured["labels"]
    bare = document(write_tree(tmp_path / "bare", training={"jax": JAX_S}, inference={}))
    assert "scatter" not in render(bare, "html")  # no cost field in any row: no chart


def test_the_measurement_fails_a_page_that_scrolls_or_hides_a_framework(browser, page, tmp_path):
    """Planted: a table too wide for the window, and a bar label that lost its framework as labels once did."""
    text = page[0].read_text(encoding="utf-8")
    wide = '<table id="planted"><tr><td style="white-space: nowrap">' + "wide " * 400 + "</td></tr></table>"
    text = text.replace("<h2>Submissions</h2>", wide + "<h2>Submissions</h2>", 1)
    text, cut = re.subn(
        r'(<g class="bar" data-framework="jax">.*?class="label"[^>]*>)jax<',
        r"\1levelfield/levelfield CI m…<",
        text,
        count=1,
        flags=re.S,
    )
    assert cut == 1
    planted = tmp_path / "planted.html"
    planted.write_text(text, encoding="utf-8")
    problems = unreadable(measure(browser, tmp_path, planted))
    assert any(p.startswith("closed: page ") for p in problems), problems
    assert any("table#planted ends at" in p for p in problems), problems
    assert any(p.startswith("label 'levelfield/levelfield CI m…' of a jax bar") for p in problems), problems
