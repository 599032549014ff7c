"""The baseline for bench/tui_bench.py: a bare Textual app with one DataTable, numpy imported."""

import numpy as np
from textual.app import App
from textual.widgets import DataTable


class Bare(App):
    BINDINGS = [("q", "quit", "quit"), ("1", "bump", "bump")]

    def compose(self):
        yield DataTable()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("pos", *[f"d{i}" for i in range(8)])
        self.rows = np.round(np.random.default_rng(0).standard_normal((4, 8)), 3)
        for i, row in enumerate(self.rows):
            table.add_row(str(i), *[f"{v:+.3f}" for v in row])
        self.n = 0

    def action_bump(self) -> None:
        """Change every cell, as an experiment key changes a table."""
        self.n += 1
        table = self.query_one(DataTable)
        table.clear()
        for i, row in enumerate(self.rows + self.n):
            table.add_row(str(i), *[f"{v:+.3f}" for v in row])
        table.add_row("n", str(self.n))


if __name__ == "__main__":
    Bare().run()
