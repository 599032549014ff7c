"""xf-tour serve: the tour in a browser, through textual-serve (the optional extra: pip install -e '.[serve]').

textual-serve starts one tour per browser session, a child process whose terminal is a pair of pipes that its
web driver speaks over; the page is an xterm.js terminal on a websocket. What this module changes in it:
- the page is our own: no font from Google's CDN (the tour runs offline; Roboto Mono, which textual-serve ships,
  is served from here), relative addresses (it works behind a reverse proxy, under a sub-path, over https),
  and a font stack with CJK fallbacks, set for the terminal in the script as well, where xterm.js reads it;
- the child is `python -m tui.cli.serve --server PID [--lang L] [--lessons DIR]`: session() below, the plain
  tour, which dies with the server (PR_SET_PDEATHSIG) and ends when its pipes close (tui/keys.py);
- a session ends at once, its tour saving its place: when its websocket closes, and for every session when
  the server stops (textual-serve asks the tour to quit and waits for it, and on a stop waits for each
  websocket's client to go, which took 16 to 24 s);
- an IPv6 address may be given in brackets, and a host that does not resolve is one line, not an error code.
textual-serve has no authentication: it binds 127.0.0.1 unless told otherwise, and says so in one line.
"""

import ipaddress
import os
import shlex
import sys

from lessons.safe import printable_line

from .parser import PROG, UsageError

INSTALL = "pip install -e '.[serve]'"
END_S = 1.5    # a session's tour has this long to save its place and exit after SIGTERM, before SIGKILL
CLOSE_S = 0.5  # a browser has this long to answer the close of its websocket
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
    port = _port(args.port)
    host, where = _host(args.host, port)
    if not _loopback(host):
        print(printable_line({
            "en": f"{PROG} serve: warning: textual-serve has no authentication; anyone who reaches {where} "
                  "gets a tour: put it behind a reverse proxy with authentication",
            "zh": f"{PROG} serve：警告：textual-serve 没有身份验证，任何能访问 {where} 的人都能打开导览；"
                  "请把它放在带身份验证的反向代理后面"}[lang]), file=sys.stderr, flush=True)
    flags = ["--server", str(os.getpid())]  # the session dies with this process (session())
    if getattr(args, "lang", None):
        flags += ["--lang", args.lang]
    if getattr(args, "lessons", None):
        from pathlib import Path
        flags += ["--lessons", str(Path(args.lessons).resolve())]  # the child may start elsewhere
    command = "exec " + shlex.join([sys.executable, "-m", __name__, *flags])  # textual-serve runs it with sh -c
    server = tour_server(Server)(command, host=host, port=port, title=PROG, public_url=f"http://{where}")
    server.lang = lang
    try:
        server.serve()
    except OSError as err:  # the port is taken, or the host is not this machine's
        why = os.strerror(err.errno) if err.errno and err.errno > 0 else err.strerror or str(err)
        raise UsageError(f"cannot listen on {where}: {why}", f"无法在 {where} 上监听：{why}") from None
    return 0


def _host(raw: str, port: int) -> tuple[str, str]:
    """The --host value as the address to bind (an IPv6 one without its brackets), and HOST:PORT as a URL
    writes it (with them); a host that does not resolve is a UsageError. (Bound as given, textual-serve's
    `[::1]` failed with "Unknown error -2".)"""
    import socket

    host = raw[1:-1] if raw.startswith("[") and raw.endswith("]") else raw
    if not host:
        raise UsageError("--host takes a name or an address, such as 127.0.0.1; got an empty one",
                         "--host 须是主机名或地址，如 127.0.0.1；收到的是空的")
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UsageError(f"cannot listen on {raw}:{port}: {why}", f"无法在 {raw}:{port} 上监听：{why}") from None
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if raw.startswith("[") and not isinstance(literal, ipaddress.IPv6Address):
        raise UsageError(f"--host takes an IPv6 address in brackets, such as [::1]; got {raw}",
                         f"--host 的方括号里须是 IPv6 地址，如 [::1]；收到 {raw}")
    return host, f"[{host}]:{port}" if isinstance(literal, ipaddress.IPv6Address) else f"{host}:{port}"


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
        sessions: dict  # each running session's AppService, and its websocket

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

        async def on_shutdown(self, app: web.Application) -> None:
            """The server stops: every session's tour saves its place and exits, every websocket closes. Left
            open, aiohttp waits for each websocket's client to close it."""
            from aiohttp import WSCloseCode

            sessions = list(self.sessions.items())
            await asyncio.gather(*(websocket.close(code=WSCloseCode.GOING_AWAY) for _, websocket in sessions),
                                 *(end_session(service) for service, _ in sessions))

        async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
            """textual-serve's (1.1), with each session kept in self.sessions while it runs, and ended by
            end_session(): textual-serve's own stop asks the tour to quit and waits for it without a bound."""
            import logging

            from textual_serve.app_service import AppService
            from textual_serve.server import to_int

            websocket = web.WebSocketResponse(heartbeat=15, timeout=CLOSE_S)
            width, height = to_int(request.query.get("width", "80"), 80), to_int(request.query.get("height", "24"), 24)
            service = None
            try:
                await websocket.prepare(request)
                service = AppService(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                                     close=websocket.close, download_manager=self.download_manager,
                                     debug=self.debug)
                self.sessions[service] = websocket
                await service.start(width, height)
                await self._process_messages(websocket, service)
            except asyncio.CancelledError:
                await websocket.close()
            except Exception as error:  # as textual-serve does: a frame that is not its JSON ends the session
                logging.getLogger("textual-serve").exception(error)
            finally:
                if service is not None:
                    await end_session(service)
                    self.sessions.pop(service, None)
            return websocket

        def listening(self, *_) -> None:
            stop = "按 Ctrl+C 停止" if self.lang == "zh" else "Ctrl+C to stop"
            print(printable_line(f"{PROG} serve: {self.public_url}/ ({stop})"), flush=True)

        def serve(self, debug: bool = False) -> None:
            """textual-serve's serve(), with listening() called once the port is bound."""
            self.debug, self.sessions = debug, {}
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.request_exit)
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                        print=self.listening, shutdown_timeout=END_S)  # after on_shutdown, nothing to wait for

    async def end_session(service) -> None:
        """End a session: SIGTERM to its tour, on which it saves its place and exits (tui/hangup.py), SIGKILL
        if it has not within END_S; then the reader of its output ends too."""
        task, process = service._task, service._process
        if task is None:  # ended already (textual-serve's own stop() does nothing now)
            return
        service._task = None
        await service._download_manager.cancel_app_downloads(app_service_id=service.app_service_id)
        try:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), END_S)
        except ProcessLookupError:
            pass
        except asyncio.TimeoutError:
            process.kill()
        try:
            await asyncio.wait_for(task, END_S)  # a child of the tour may hold its output open a moment
        except asyncio.TimeoutError:
            pass

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
    """One browser session, which textual-serve starts per websocket: the tour, run by xf-tour's own main().
    `--server PID` first names the server, which the session must not outlive: if the server has gone before
    the kernel was asked to end the session with it, it ends now, as the signal would have ended it."""
    import signal

    if "web_driver" not in os.environ.get("TEXTUAL_DRIVER", ""):
        print(f"{PROG}: this runs one browser session of `{PROG} serve`; start the tour with `{PROG}`",
              file=sys.stderr)
        return 2
    if argv[:1] == ["--server"] and len(argv) > 1 and argv[1].isdigit():
        from ..hangup import die_with_parent

        if not die_with_parent(int(argv[1])):
            return 128 + signal.SIGTERM
        argv = argv[2:]
    from . import main

    sys.stdin, sys.stdout = _Terminal(sys.stdin), _Terminal(sys.stdout)
    return main(argv)


if __name__ == "__main__":
    sys.exit(session(sys.argv[1:]))
