"""xf-tour serve, end to end: a real server in a subprocess, its page, and a browser session over its websocket
(as textual-serve's textual.js speaks it), down to the first lesson's first frame; then the session's child
process must be gone. Needs the serve extra (CI installs .[test,serve]); the harness is tests/helpers/serve.py."""

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import aiohttp
import pytest
from helpers.cli import ROOT
from helpers.marks import WALL_CLOCK
from helpers.procs import children, command_line, wait_gone
from helpers.serve import START, first_frame, first_lesson, free_port, read_line, serving, session_of

from tui.cli.parser import UsageError
from tui.cli.serve import FONTS, cmd_serve

CJK_FONTS = ("Noto Sans Mono CJK SC", "Sarasa Mono SC", "Microsoft YaHei Mono")


@pytest.mark.slow
async def test_page_is_offline_and_has_cjk_fonts(tmp_path):
    with serving(tmp_path, "--lang", "zh") as (proc, port):
        async with aiohttp.ClientSession() as client:
            async with client.get(f"http://127.0.0.1:{port}/") as page:
                assert page.status == 200
                html = await page.text()
            async with client.get(f"http://127.0.0.1:{port}/static/js/textual.js") as script:
                assert script.status == 200
                js = await script.text()
            addresses = re.findall(r'(?:src|href|url)[=(]"([^"]+)"', html)
            for address in addresses:  # all served here: nothing comes from a CDN
                assert not re.match(r"[a-z]+:|//", address), address
                async with client.get(f"http://127.0.0.1:{port}/{address}") as res:
                    assert res.status == 200, address
    assert "static/fonts/RobotoMono-VariableFont_wght.ttf" in addresses and "googleapis" not in html
    stack = re.search(r"--tour-fonts: ([^;]+);", html).group(1)  # the page's CSS font stack
    assert stack == FONTS and all(f"'{name}'" in stack for name in CJK_FONTS) and stack.endswith("monospace")
    assert f'fontFamily:"{FONTS}"' in js and "'Roboto Mono', Monaco" not in js  # the terminal's own font option
    assert '<html lang="zh-CN">' in html  # the browser picks Simplified Chinese glyphs


@pytest.mark.slow
@WALL_CLOCK
async def test_a_session_shows_the_first_lesson_and_ends_with_its_websocket(tmp_path):
    lesson = first_lesson()
    with serving(tmp_path, "--lang", "en") as (proc, port):
        client, ws, text = await first_frame(port, lesson.title.en)
        try:
            child = session_of(proc.pid)
            assert "--lang en" in command_line(child)
            assert re.search(rf"\b1/{len(lesson.steps) + 1}\b", text), text[:400]  # the lesson's first step
        finally:
            await ws.close()
            await client.close()
        assert wait_gone(child, 2), "the session's tour outlived its websocket by 2 s"
        assert proc.poll() is None and children(proc.pid) == []  # the server serves on, with no session left
    assert proc.returncode == 0


@pytest.mark.slow
@WALL_CLOCK
async def test_stopping_the_server_ends_its_sessions(tmp_path):
    lesson = first_lesson()
    with serving(tmp_path, "--lang", "zh") as (proc, port):
        client, ws, text = await first_frame(port, lesson.title.zh)
        try:
            child = session_of(proc.pid)
            proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(proc.wait, 30)
        finally:
            await ws.close()
            await client.close()
        assert wait_gone(child, 20), "a session's tour outlived the server"
    assert proc.returncode == 0


@pytest.mark.slow
def test_bound_elsewhere_it_warns_in_one_line(tmp_path):
    with serving(tmp_path, "--host", "0.0.0.0", "--lang", "en") as (proc, port):
        warning = read_line(proc.stderr, time.monotonic() + START)
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=30)
    assert warning.startswith("xf-tour serve: warning: textual-serve has no authentication")
    assert f"0.0.0.0:{port}" in warning and "reverse proxy with authentication" in warning
    assert "warning" not in rest.decode() and proc.returncode == 0  # one line, once


@pytest.mark.slow
def test_the_warning_in_chinese_and_none_on_loopback(tmp_path):
    with serving(tmp_path, "--host", "0.0.0.0", "--lang", "zh") as (proc, port):
        warning = read_line(proc.stderr, time.monotonic() + START)
    assert warning.startswith("xf-tour serve：警告：") and "反向代理" in warning
    with serving(tmp_path, "--lang", "en") as (proc, port):  # 127.0.0.1: nothing said
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "warning" not in err.decode() and proc.returncode == 0


def test_missing_extra_says_how_to_install():
    code = ("import sys; sys.modules['textual_serve'] = None; from tui.cli import main; "
            "sys.exit(main(['serve', '--lang', 'en']))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.splitlines() == ["xf-tour serve: error: serve needs textual-serve: "
                                       "install with pip install -e '.[serve]'"]


def test_a_taken_port_is_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run([sys.executable, "-m", "tui", "serve", "--port", str(port), "--lang", "en"],
                             capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.splitlines()[-1].startswith(f"xf-tour serve: error: cannot listen on 127.0.0.1:{port}: ")


@pytest.mark.parametrize("port", [0, -1, 65536])
def test_bad_ports_are_refused(port):
    with pytest.raises(UsageError, match="--port takes a number from 1 to 65535"):
        cmd_serve(SimpleNamespace(host="127.0.0.1", port=port, lang="en"), "en")


def test_the_session_command_needs_textual_serve():
    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_DRIVER"}
    run = subprocess.run([sys.executable, "-m", "tui.cli.serve"], capture_output=True, text=True, cwd=ROOT,
                         env=env, timeout=60)
    assert run.returncode == 2 and "xf-tour serve" in run.stderr


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not has_ipv6_loopback(), reason="this machine has no IPv6 loopback (::1) to bind")
@pytest.mark.slow
async def test_an_ipv6_loopback_in_brackets_is_served(tmp_path):
    """textual-serve bound '[::1]' as a name, and said 'Unknown error -2'."""
    with serving(tmp_path, "--host", "[::1]", "--lang", "en") as (proc, port):
        async with aiohttp.ClientSession() as client:
            async with client.get(f"http://[::1]:{port}/") as page:
                assert page.status == 200 and "xf-tour" in await page.text()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "warning" not in err.decode()  # loopback: nothing to warn of


@pytest.mark.parametrize("host, why", [("no-such-host.invalid", "cannot listen on no-such-host.invalid:"),
                                       ("[::1", "cannot listen on [::1:"), ("[127.0.0.1]", "IPv6 address in brackets"),
                                       ("", "--host takes a name or an address")])
def test_a_host_that_cannot_be_bound_is_one_line(host, why):
    run = subprocess.run([sys.executable, "-m", "tui", "serve", "--host", host, "--port", str(free_port()),
                          "--lang", "en"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 2 and run.stdout == "" and len(run.stderr.splitlines()) == 1, run.stderr
    assert run.stderr.startswith("xf-tour serve: error: ") and why in run.stderr and "Unknown error" not in run.stderr


def test_a_host_is_never_echoed_raw():
    """A --host with ESC and BEL reached the terminal raw in the warning line (it would set the window's title)."""
    run = subprocess.run([sys.executable, "-m", "tui", "serve", "--host", "\x1b]0;T\x07", "--port", str(free_port()),
                          "--lang", "en"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 2 and "\x1b" not in run.stderr + run.stdout and "\x07" not in run.stderr + run.stdout
    assert "␛]0;T␇" in run.stderr and len(run.stderr.splitlines()) == 1
