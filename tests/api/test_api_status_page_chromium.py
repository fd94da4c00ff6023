"""The status page in headless Chromium, served over real loopback HTTP by uvicorn: the rendered
DOM names every provider with its state, and the screenshot shows each state's colour."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from ops_seed import MODEL, TAGS, Api

from canary.api.page import FLOOR_BREACHED_COLOUR, STATE_COLOURS
from canary.store.repository import Store

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
pytestmark = [pytest.mark.chromium, pytest.mark.slow]  # a browser process per check
STATES = {
    "alpha": "healthy",
    "bravo": "quarantined",
    "charlie/fp8": "suspect",
    "delta": "excluded",
    "echo": "excluded",
    "foxtrot": "healthy",  # slow: its latency is degraded, a separate field
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('page') / 'canary.db'}")
    store.upgrade()
    api = Api(store, model=MODEL)
    server = uvicorn.Server(
        uvicorn.Config(api.app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = threading.Event()
    while not started.wait(0.05):
        if server.started:
            started.set()
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/"
    server.should_exit = True
    thread.join(timeout=10)
    store.dispose()


@pytest.fixture(scope="module")
def chromium() -> str:
    """The browser; without one, the module's checks are skipped in one line (`.ci/run` installs
    it when it is missing)."""
    if CHROMIUM is None:
        pytest.skip(
            "headless Chromium is not installed (chromium, chromium-browser, google-chrome)"
        )
    return CHROMIUM


def _chromium(chromium: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def _pixels(png: bytes, max_rows: int) -> tuple[int, int, int, list[bytes]]:
    """Decode an 8-bit, non-interlaced RGB/RGBA PNG: width, height, bytes per pixel and its first
    ``max_rows`` rows of raw pixels (unfiltering in pure Python is slow, so stop early)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, data, header = 8, b"", b""
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        chunk = png[pos + 8 : pos + 8 + length]
        header = chunk if kind == b"IHDR" else header
        data += chunk if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, previous = zlib.decompress(data), width * bpp, [], bytearray(width * bpp)
    for y in range(min(height, max_rows)):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (
                    line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)
                ) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, bpp, rows


def test_the_rendered_page_names_every_provider_with_its_state(chromium: str, served: str) -> None:
    done = _chromium(chromium, "--dump-dom", served)
    assert done.returncode == 0, done.stderr[-500:]
    dom = done.stdout
    for tag, state in STATES.items():
        row = re.search(
            rf'<tr class="state-{re.escape(state)}"><td><code>{re.escape(tag)}</code>', dom
        )
        assert row, f"{tag} is not shown as {state}"
    assert set(STATES) == set(TAGS)
    foxtrot = re.search(r"<code>foxtrot</code>.*?</tr>", dom, re.S)
    assert foxtrot and re.search(r'class="lat"[^>]*>degraded</span>', foxtrot.group(0))
    assert "Probe cost:" in dom


def test_the_screenshot_shows_each_state_in_its_colour(
    chromium: str, served: str, tmp_path: Path
) -> None:
    shot = tmp_path / "status.png"
    done = _chromium(chromium, "--window-size=1200,900", f"--screenshot={shot}", served)
    assert shot.exists(), done.stderr[-500:]
    width, height, bpp, rows = _pixels(shot.read_bytes(), max_rows=450)
    assert (width, height) == (1200, 900)
    for state in set(STATES.values()):
        rgb = bytes.fromhex(STATE_COLOURS[state].lstrip("#"))
        count = sum(
            row[x : x + 3] == rgb for row in rows if rgb in row for x in range(0, len(row), bpp)
        )
        assert count > 50, f"no {state} pill ({STATE_COLOURS[state]}) in the screenshot"


BREACHED = "acme/breached-1"


@pytest.fixture(scope="module")
def breached(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A model whose operators forced exclusions until fewer endpoints than its floor are usable."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('breached') / 'canary.db'}")
    store.upgrade()
    api = Api(store, model=BREACHED)
    for tag in ("alpha", "charlie/fp8", "foxtrot"):
        store.add_exclusion(
            BREACHED, tag, "incident", "ops", None, api.clock.now,
            builtin=(), floor=2, force=True,
        )  # fmt: skip
    assert api.service.refresh()
    server = uvicorn.Server(
        uvicorn.Config(api.app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = threading.Event()
    while not started.wait(0.05):
        if server.started:
            started.set()
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/"
    server.should_exit = True
    thread.join(timeout=10)
    store.dispose()


def test_a_breached_floor_is_shown_in_red(chromium: str, breached: str, tmp_path: Path) -> None:
    done = _chromium(chromium, "--dump-dom", breached)
    assert done.returncode == 0, done.stderr[-500:]
    head = re.search(r'<div class="listhead">.*?</div>', done.stdout, re.S)
    assert head and "floor breached</span>" in head.group(0)
    assert ">fresh</span>" not in head.group(0) and "up to date, built" in head.group(0)
    assert re.search(r'class="floor breached">1 usable endpoint', done.stdout)
    assert "withheld to hold it: bravo" in done.stdout  # its quarantine gave capacity back first
    assert "Legend" in done.stdout and "last round" in done.stdout
    shot = tmp_path / "breached.png"
    done = _chromium(chromium, "--window-size=1200,900", f"--screenshot={shot}", breached)
    assert shot.exists(), done.stderr[-500:]
    width, _, bpp, rows = _pixels(shot.read_bytes(), max_rows=300)
    red = bytes.fromhex(FLOOR_BREACHED_COLOUR.lstrip("#"))
    count = sum(
        row[x : x + 3] == red for row in rows if red in row for x in range(0, len(row), bpp)
    )
    assert count > 50, "no red floor-breached pill in the top of the screenshot"
