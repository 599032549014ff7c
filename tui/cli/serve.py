"""xf-tour serve: the tour in a browser, through textual-serve (the optional extra: pip install -e '.[serve]').

textual-serve starts one tour per browser session, a child process whose terminal is a pair of pipes that its
web driver speaks over; the page is an xterm.js terminal on a websocket. What this module changes in it:
- the page is our own: no font from Google's CDN (the tour runs offline; Roboto Mono, which textual-serve ships,
  is served from here), relative addresses (it works behind a reverse proxy, under a sub-path, over https),
  and a font stack with CJK fallbacks, set for the terminal in the script as well, where xterm.js reads it;
- the child is `python -m tui.cli.serve [--lang L] [--lessons DIR]`: session() below, the plain tour.
textual-serve has no authentication: it binds 127.0.0.1 unless told otherwise, and says so in one line.
"""

import ipaddress
import shlex
import sys

from .parser import PROG, UsageError

INSTALL = "pip install -e '.[serve]'"
FONTS = ("'Roboto Mono', 'Noto Sans Mono CJK SC', 'Sarasa Mono SC', 'Microsoft YaHei Mono', "
         "'Noto Sans CJK SC', 'WenQuanYi Zen Hei Mono', 'PingFang SC', monospace")
SCRIPT_FONTS = "fontFamily:\"'Roboto Mono', Monaco, 'Courier New', monospace\""  # in textual-serve 1.1's textual.js

WORDS = {  # what the page says, in the tour's language
    "en": {"html_lang": "en", "ended": "Session ended.", "restart": "Restart", "start": "Start"},
    "zh": {"html_lang": "zh-CN", "ended": "会话已结束。", "restart": "重新开始", "start": "开始"},
}

PAGE = """<!DOCTYPE html>
<html lang="{{ words.html_lang }}">
  <head>
    <meta charset="utf-8" />
    <title>{{ application.name }}</title>
    <link rel="stylesheet" href="static/css/xterm.css" />
    <link rel="preload" href="static/fonts/RobotoMono-VariableFont_wght.ttf" as="font" crossorigin />
    <script src="static/js/textual.js"></script>
    <style>
      @font-face {
        font-family: "Roboto Mono";
        src: url("static/fonts/RobotoMono-VariableFont_wght.ttf") format("truetype");
        font-weight: 100 700;
        font-style: normal;
      }
      @font-face {
        font-family: "Roboto Mono";
        src: url("static/fonts/RobotoMono-Italic-VariableFont_wght.ttf") format("truetype");
        font-weight: 100 700;
        font-style: italic;
      }
      :root { --tour-fonts: {{ fonts | safe }}; }
      body { background: #0c181f; margin: 0; font-family: var(--tour-fonts); }
      .dialog-container {
        position: absolute; width: 100vw; height: 100vh; display: flex;
        align-items: center; justify-content: center; z-index: 10;
      }
      .shade { position: absolute; width: 100%; height: 100%; background: #0c181f; }
      .intro {
        width: 640px; height: 240px; font-size: 16px; z-index: 20; font-family: var(--tour-fonts);
        text-align: center; color: rgba(255, 255, 255, 0.95); background-color: #12232d;
        display: flex; flex-direction: column; align-items: center; justify-content: center; margin: 32px;
      }
      body.-first-byte .intro-dialog, body.-first-byte .intro-dialog .shade { display: none; }
      body .textual-terminal { opacity: 0; transition: opacity 0.3s ease-out; width: 100vw; height: 100vh; }
      body.-first-byte .textual-terminal { opacity: 1; }
      body button {
        padding: 16px 32px; background-color: #5e0ba7; color: rgba(255, 255, 255, 0.95); border: none;
        font-family: var(--tour-fonts); margin: 16px; display: block;
      }
      button:hover { background: #ac5af4; cursor: pointer; }
      .closed-dialog { display: none; }
      body.-closed .closed-dialog { display: flex; }
      #start { display: none; }
      #start.-delay { display: flex; }
    </style>
    <script>
      function refresh() {
        const params = new URLSearchParams(window.location.search);
        params.delete("delay");
        window.location.href = window.location.pathname + "?" + params.toString();
      }
      // textual.js set window.onload just above; it measures the font when it starts: load Roboto Mono first
      const startTerminal = window.onload;
      window.onload = (event) => {
        const terminal = document.getElementById("terminal");
        const ws = (window.location.protocol === "https:" ? "wss://" : "ws://") + window.location.host;
        terminal.dataset.sessionWebsocketUrl = ws + window.location.pathname.replace(/[^/]*$/, "") + "ws";
        document.fonts.load("16px 'Roboto Mono'").catch(() => null).then(() => startTerminal(event));
      };
    </script>
  </head>
  <body>
    <div class="dialog-container intro-dialog">
      <div class="shade"></div>
      <div class="intro">
        <div>{{ application.name }}</div>
        <button type="button" onClick="refresh()" id="start">{{ words.start }}</button>
      </div>
    </div>
    <div class="dialog-container closed-dialog">
      <div class="shade"></div>
      <div class="intro">
        <div class="message">{{ words.ended }}</div>
        <button type="button" onClick="refresh()">{{ words.restart }}</button>
      </div>
    </div>
    <div id="terminal" class="textual-terminal" data-font-size="{{ font_size }}"></div>
  </body>
</html>
"""


def cmd_serve(args, lang) -> int:
    """Serve the tour at http://HOST:PORT until Ctrl+C; 2 when textual-serve is missing or the port is taken."""
    try:
        from textual_serve.server import Server
    except ImportError:
        raise UsageError(f"serve needs textual-serve: install with {INSTALL}",
                         f"serve 需要 textual-serve：请用 {INSTALL} 安装") from None
    host, port = args.host, _port(args.port)
    if not _loopback(host):
        print({"en": f"{PROG} serve: warning: textual-serve has no authentication; anyone who reaches {host}:{port} "
                     "gets a tour: put it behind a reverse proxy with authentication",
               "zh": f"{PROG} serve：警告：textual-serve 没有身份验证，任何能访问 {host}:{port} 的人都能打开导览；"
                     "请把它放在带身份验证的反向代理后面"}[lang], file=sys.stderr, flush=True)
    flags = []
    if getattr(args, "lang", None):
        flags += ["--lang", args.lang]
    if getattr(args, "lessons", None):
        from pathlib import Path
        flags += ["--lessons", str(Path(args.lessons).resolve())]  # the child may start elsewhere
    command = "exec " + shlex.join([sys.executable, "-m", __name__, *flags])  # textual-serve runs it with sh -c
    server = tour_server(Server)(command, host=host, port=port, title=PROG)
    server.lang = lang
    try:
        server.serve()
    except OSError as err:  # the port is taken, or the host is not this machine's
        import os
        why = os.strerror(err.errno) if err.errno else str(err)
        raise UsageError(f"cannot listen on {host}:{port}: {why}", f"无法在 {host}:{port} 上监听：{why}") from None
    return 0


def _port(raw) -> int:
    """The --port value as a port number."""
    try:
        port = int(raw)
    except (TypeError, ValueError):
        port = -1
    if not 1 <= port <= 65535:
        raise UsageError(f"--port takes a number from 1 to 65535, got {raw!r}",
                         f"--port 须是 1 到 65535 之间的数，收到 {raw!r}")
    return port


def _loopback(host: str) -> bool:
    """Whether `host` is reachable from this machine only."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def tour_server(Server):
    """textual-serve's Server with the tour's page and script, and a one-line start message."""
    import asyncio
    import signal

    import aiohttp_jinja2
    import jinja2
    from aiohttp import web

    class TourServer(Server):
        lang = "en"

        async def _make_app(self) -> web.Application:
            script = (self.statics_path / "js" / "textual.js").read_text(encoding="utf-8")
            if SCRIPT_FONTS not in script:  # pyproject pins textual-serve to 1.1, whose script this matches
                raise RuntimeError(f"textual-serve's textual.js no longer sets {SCRIPT_FONTS}")
            self.script = script.replace(SCRIPT_FONTS, f'fontFamily:"{FONTS}"')
            app = web.Application()
            env = aiohttp_jinja2.setup(app, loader=jinja2.DictLoader({"app_index.html": PAGE}), autoescape=True)
            env.globals.update(words=WORDS[self.lang], fonts=FONTS)
            app.add_routes([
                web.get("/", self.handle_index, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.get("/static/js/textual.js", self.handle_script),  # before /static, which would serve the file
                web.static("/static", self.statics_path, name="static"),
            ])
            app.on_startup.append(self.on_startup)
            app.on_shutdown.append(self.on_shutdown)
            return app

        async def handle_script(self, request: web.Request) -> web.Response:
            return web.Response(text=self.script, content_type="application/javascript")

        async def on_startup(self, app: web.Application) -> None:
            pass  # textual-serve's says where it serves here, before it listens: listening() says it after

        def listening(self, *_) -> None:
            stop = "按 Ctrl+C 停止" if self.lang == "zh" else "Ctrl+C to stop"
            print(f"{PROG} serve: {self.public_url}/ ({stop})", flush=True)

        def serve(self, debug: bool = False) -> None:
            """textual-serve's serve(), with listening() called once the port is bound."""
            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.request_exit)
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                        print=self.listening)

    return TourServer


class _Terminal:
    """A pipe of textual-serve's web driver, which is the session's terminal: isatty() says so, so that the
    tour's check for a terminal passes. Everything else is the pipe's own."""

    def __init__(self, stream):
        self._stream = stream

    def isatty(self) -> bool:
        return True

    def __getattr__(self, name):
        return getattr(self._stream, name)


def session(argv) -> int:
    """One browser session, which textual-serve starts per websocket: the tour, run by xf-tour's own main()."""
    import os

    if "web_driver" not in os.environ.get("TEXTUAL_DRIVER", ""):
        print(f"{PROG}: this runs one browser session of `{PROG} serve`; start the tour with `{PROG}`",
              file=sys.stderr)
        return 2
    from . import main

    sys.stdin, sys.stdout = _Terminal(sys.stdin), _Terminal(sys.stdout)
    return main(argv)


if __name__ == "__main__":
    sys.exit(session(sys.argv[1:]))
