"""Layout: how a step's and a view's texts, tables and charts take their cells, for the page and for `print`.

    screen.py    a step's page at a width: title, body (tables and prose), message, footer
    wrap.py      prose wrapped to a width, CJK-aware; shorten()
    tables.py    an engine Table laid out once: its cells, their widths and justification, the style runs
    charts.py    charts in ASCII and braille
    blocks.py    a view's charts, tables and facts as Rich renderables, placed on the page
    flatten.py   the app's emitter: renderables as one Text of few style runs, tables from tables.py
    terminal.py  print's emitter: the same characters and SGR codes as Rich's console, from tables.py

Nothing here imports the app (Textual) or the page; the page (tui/page.py) hands screen.py its parts, and
`print` calls terminal.py or blocks.py.
The package imports no module of its own, so `print VIEW` loads only what it uses.
"""
