"""A real browser on `xf-tour serve`: headless Chromium (Debian's `chromium` package) opens the page, the websocket
connects, the first lesson's first frame is drawn, and a screenshot is written, in zh and in en. Look at the
PNGs: Chinese must show as Chinese, not as boxes (tofu).

    apt-get install -y chromium fonts-noto-cjk     # the fonts: a machine without a CJK font shows boxes
    .venv/bin/python bench/serve_check.py [--out /tmp] [--chromium chromium]

Chromium is driven over its DevTools protocol (aiohttp, which textual-serve brings): its --screenshot flag
shoots before the websocket has delivered anything. Prints, per language, the PNG written and what the page
reports: whether the websocket's first bytes arrived (and after how long), or the session closed, and Roboto
Mono (served by serve, not a CDN) loaded, and which families of the page's CJK stack fontconfig has
(document.fonts.check cannot tell: it says true for any font that is not a web font).
Exit status 1 when a language's frame never arrived.
"""

import argparse
import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tui.cli.serve import FONTS  # noqa: E402  (after ROOT, for a run from anywhere)

CJK = tuple(name.strip(" '") for name in FONTS.split(",")[1:-1])  # the page's stack, less Roboto Mono and monospace
WAIT = 60  # seconds for a server, the browser, or a first frame


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(lang: str, state: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = dict(os.environ, XF_TOUR_STATE_DIR=str(state), TEXTUAL_ANIMATIONS="none")
    proc = subprocess.Popen([sys.executable, "-m", "tui", "serve", "--port", str(port), "--lang", lang],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = proc.stdout.readline().decode()  # "xf-tour serve: http://127.0.0.1:PORT/ (...)" once it listens
    if "http://" not in line:
        raise SystemExit(f"serve did not start: {line!r}")
    return proc, port


async def devtools_page(port: int) -> str:
    """The websocket address of the browser's first page, once its DevTools endpoint answers."""
    deadline = time.monotonic() + WAIT
    async with aiohttp.ClientSession() as client:
        while True:
            try:
                async with client.get(f"http://127.0.0.1:{port}/json/list") as res:
                    pages = [t for t in await res.json() if t["type"] == "page"]
                    if pages:
                        return pages[0]["webSocketDebuggerUrl"]
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("chromium's DevTools endpoint never answered")
            await asyncio.sleep(0.2)


class DevTools:
    """Commands over one DevTools websocket, answered by id."""

    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    async def call(self, method: str, **params):
        self.next_id += 1
        await self.ws.send_str(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads((await self.ws.receive(timeout=WAIT)).data)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    async def evaluate(self, expression: str):
        result = await self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        return result["result"].get("value")


async def shoot(chromium: str, url: str, png: Path, settle: float) -> dict:
    """Open `url` in headless Chromium at 1000x700, wait for the terminal's first bytes and `settle` seconds
    more, and write a screenshot to `png`; what the page said."""
    debug_port = free_port()
    with tempfile.TemporaryDirectory() as profile:
        browser = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                    "--no-first-run", f"--user-data-dir={profile}", "--window-size=1000,700",
                                    f"--remote-debugging-port={debug_port}", "about:blank"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            async with aiohttp.ClientSession() as client:
                async with client.ws_connect(await devtools_page(debug_port), max_msg_size=0) as ws:
                    tools = DevTools(ws)
                    await tools.call("Page.enable")  # the viewport itself 1000x700 (the window has chrome)
                    await tools.call("Emulation.setDeviceMetricsOverride", width=1000, height=700,
                                     deviceScaleFactor=1, mobile=False)
                    await tools.call("Page.navigate", url=url)
                    began = time.monotonic()
                    arrived = closed = False
                    while not (arrived or closed) and time.monotonic() < began + WAIT:
                        arrived, closed = await tools.evaluate(
                            "document.body === null ? [false, false] : ['-first-byte', '-closed']"
                            ".map(c => document.body.classList.contains(c))")
                        await asyncio.sleep(0.2)
                    waited = time.monotonic() - began
                    await asyncio.sleep(settle)  # the frame's later writes, and the fade-in (0.3 s)
                    roboto = await tools.evaluate("document.fonts.check(\"16px 'Roboto Mono'\")")
                    shot = await tools.call("Page.captureScreenshot", format="png")
                    png.write_bytes(base64.b64decode(shot["data"]))
        finally:
            browser.send_signal(signal.SIGTERM)
            browser.wait(timeout=30)
    return {"first_bytes": bool(arrived), "seconds": round(waited, 1), "session_closed": bool(closed),
            "roboto_mono_loaded": roboto}


def installed_cjk_fonts() -> list[str]:
    """The families fontconfig knows among CJK, or [] without fc-list."""
    if shutil.which("fc-list") is None:
        return []
    out = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True).stdout
    return sorted({name for line in out.splitlines() for name in line.split(",") if name in CJK})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp", help="folder for serve-zh.png and serve-en.png")
    parser.add_argument("--chromium", default="chromium")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds after the first bytes")
    args = parser.parse_args()
    print(f"fontconfig CJK families: {installed_cjk_fonts() or 'none (apt-get install fonts-noto-cjk)'}")
    failed = False
    with tempfile.TemporaryDirectory() as state:
        for lang in ("zh", "en"):
            proc, port = start_server(lang, Path(state) / lang)
            try:
                png = Path(args.out) / f"serve-{lang}.png"
                seen = asyncio.run(shoot(args.chromium, f"http://127.0.0.1:{port}/", png, args.settle))
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
            failed |= not seen["first_bytes"]
            print(f"{lang}: {png} {json.dumps(seen, ensure_ascii=False)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
