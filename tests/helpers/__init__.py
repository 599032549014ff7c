"""The harness the tests share, imported by them (`from helpers.pty import Terminal`); tests/conftest.py keeps
the fixtures. Nothing here is a test, and nothing here imports a test module.

  cli        ROOT, and the tour's command line run in a fresh process (cli_environ, run_cli)
  screen     what the app shows, as plain text (screen_text, plain, settings, step_index, body_fits)
  pilot      driving the app under Pilot: keys and clicks as the terminal driver posts them, waits
  pty        the tour on a real pty, as sshd runs it (Terminal, terminals)
  procs      processes from /proc: children, command lines, memory, waiting for one to end
  serve      `xf-tour serve` in a subprocess and a browser session over its websocket
  lessons    the folders of broken lessons, and a lesson's plain reading
  classroom  accounts and keys for the classroom host's tests
  marks      WALL_CLOCK: the tests that bound a child's seconds, kept to one pytest-xdist worker in turn

The loopback sshd, which bench/classroom_load.py drives too, lives in bench/sshd.py; SmolLM2's GGUF file,
fetched once into a cache as a user would, and its metadata, which bench/real_tokenizer.py reads too, in
bench/smollm.py."""
