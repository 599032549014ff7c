"""Heatmaps: each cell of a matrix shaded by its value, with its number still printed in it.

An engine table names the kind of values its cells hold (Table.heat), and the screen picks the shading for
the terminal it writes to:

    weights   attention weights in [0, 1]: a sequential palette (viridis), dark for little, light for much
    signed    values of either sign (sinusoidal positions, q.k scores): a diverging palette, blue below
              zero and red above, scaled by the table's largest |value|
    mask      a causal mask: blocked cells (-inf) greyed, open ones (0) left plain

Three terminals, three renderings, each of which reads correctly on its own:

    color     truecolor and 256 colours: a shade per value, in a few levels, so that neighbouring cells of
              one level share one style run (fewer escape codes per line over SSH)
    ansi      16 colours (TERM=linux): the ANSI colours, whose exact shades the terminal decides; black text
              reads in every common palette (xterm, VGA, Monokai, Alabaster) only on white, bright white,
              bright green, bright yellow and bright cyan, which the two scales share out so that no colour
              means two things on one screen (scores above attention weights): signed values yellow above
              zero and cyan below; weights grey, then white, then green for the most
    mono      NO_COLOR, `xf-tour print`: bold, dim and reverse only, the marks the tour had before colour

In every rendering the largest weight in each row is bold, so a row's peak never depends on telling two
shades apart. The text colour of each shade is the one with the better contrast against it; a test checks
that every pair reaches WCAG's 4.5:1.
"""

import functools
import math

WEIGHTS, SIGNED, MASK = "weights", "signed", "mask"
MODES = ("color", "ansi", "mono")

# viridis at seven points from 0.1 to 1: perceptually even, readable to colour-blind eyes. (Two middle points
# moved a little, to where black or white text reads on them in truecolor and as a 256-colour terminal rounds.)
SEQUENTIAL = ("#482475", "#414487", "#2d708e", "#23898e", "#22a884", "#7ad151", "#fde725")
# ColorBrewer RdBu, from the faintest to the strongest shade of each sign
POSITIVE = ("#fddbc7", "#f4a582", "#d6604d", "#b2182b")
NEGATIVE = ("#d1e5f0", "#92c5de", "#4393c3", "#2166ac")
BLOCKED = "#3a3a3a"  # a masked cell's background: the cell is there, and closed
BLOCKED_TEXT = "#b0b0b0"
DARK_TEXT, LIGHT_TEXT = "#000000", "#ffffff"

FAINT_WEIGHT = 0.05  # a weight below this is left unshaded and dim: next to nothing
FAINT_SIGNED = 0.1   # a |value| / scale below this is left unshaded and dim


def mode_for(no_color: bool, color_system: str | None) -> str:
    """The rendering for a terminal: NO_COLOR wins; then 16 colours or fewer, then anything richer."""
    if no_color or not color_system:
        return "mono"
    return "ansi" if color_system in ("standard", "windows") else "color"


def luminance(hex_colour: str) -> float:
    """WCAG relative luminance of #rrggbb."""
    def channel(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two #rrggbb colours, 1 to 21."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@functools.cache
def text_on(background: str) -> str:
    """Black or white, whichever reads better on the background: as written, and as a 256-colour terminal
    rounds it (the worse of the two counts)."""
    from rich.color import Color, ColorSystem

    rounded = Color.parse(background).downgrade(ColorSystem.EIGHT_BIT).get_truecolor().hex
    return max((DARK_TEXT, LIGHT_TEXT), key=lambda fg: min(contrast(fg, background), contrast(fg, rounded)))


def _level(x: float, n: int) -> int:  # x in [0, 1] -> 0 .. n - 1
    return min(n - 1, max(0, int(x * n)))


def scale_of(values) -> float:
    """The largest finite |value|: what a signed table's strongest shade stands for."""
    finite = [abs(v) for v in values if isinstance(v, float) and math.isfinite(v)]
    return max(finite, default=0.0) or 1.0


def style(kind: str, value, mode: str, scale: float = 1.0, peak: bool = False) -> str:
    """The style of one cell: `kind` from the table, `mode` from the terminal; `peak` for the largest weight
    of its row. A value that is not a number (a label, a "...") is never shaded."""
    if not isinstance(value, float) or math.isnan(value):
        return ""
    if kind == MASK:
        return _mask(value, mode)
    if kind == SIGNED:
        return _signed(value / scale if math.isfinite(value) else value, mode)
    return _weight(value, mode, peak)


def _weight(w: float, mode: str, peak: bool) -> str:
    bold = "bold " if peak else ""
    if mode == "mono":
        if w >= 0.75:
            return "bold reverse"
        return "bold" if peak or w >= 0.4 else ("dim" if w < FAINT_WEIGHT else "")
    if w < FAINT_WEIGHT:
        return "bold" if peak else "dim"
    if mode == "ansi":
        if w < 0.25:
            return bold.strip()
        return bold + ("black on white" if w < 0.5 else "black on bright_white" if w < 0.75
                       else "black on bright_green")
    shade = SEQUENTIAL[_level((w - FAINT_WEIGHT) / (1 - FAINT_WEIGHT), len(SEQUENTIAL))]
    return f"{bold}{text_on(shade)} on {shade}"


def _signed(x: float, mode: str) -> str:
    if not math.isfinite(x):
        return _mask(x, mode) if x < 0 else ""
    size = abs(x)
    if size < FAINT_SIGNED:
        return "dim"
    if mode == "mono":
        return "bold" if size >= 0.5 else ""
    if mode == "ansi":
        if size < 0.5:
            return ""
        return "black on bright_yellow" if x > 0 else "black on bright_cyan"
    shades = POSITIVE if x > 0 else NEGATIVE
    shade = shades[_level((size - FAINT_SIGNED) / (1 - FAINT_SIGNED), len(shades))]
    return f"{text_on(shade)} on {shade}"


def _mask(x: float, mode: str) -> str:
    if x == -math.inf:
        return f"{BLOCKED_TEXT} on {BLOCKED}" if mode == "color" else "dim"
    return ""


def table_styles(table, mode: str) -> list[list[str]]:
    """The style of every cell of an engine table, row by row ("" for a cell left plain). The largest weight
    is bold in every mode: in each row of a matrix, or in its column when one column is shaded. A cell that
    prints the same number as the largest is bold too: two cells that read alike are marked alike."""
    from .format import format_value

    rows = table.rows
    if not table.heat or not rows:
        return [[""] * len(row) for row in rows]
    keys = [c.key for c in table.columns]
    cols = [keys.index(k) for k in table.heat_cols] if table.heat_cols else list(range(1, len(keys)))
    scale = scale_of([row[j] for row in rows for j in cols]) if table.heat == SIGNED else 1.0

    def shown(i, j):
        return format_value(rows[i][j], table.columns[j].fmt, "en")

    def peaks(cells):  # [(row, column)] -> the cells that print the largest weight
        numbers = [(rows[i][j], i, j) for i, j in cells if isinstance(rows[i][j], float) and math.isfinite(rows[i][j])]
        if table.heat != WEIGHTS or not numbers:
            return set()
        top = shown(*max(numbers)[1:])
        return {(i, j) for _, i, j in numbers if shown(i, j) == top}

    if len(cols) == 1:
        peak = peaks([(i, cols[0]) for i in range(len(rows))])
    else:
        peak = set().union(*(peaks([(i, j) for j in cols]) for i in range(len(rows))))
    out = []
    for i, row in enumerate(rows):
        styles = [""] * len(row)
        for j in cols:
            styles[j] = style(table.heat, row[j], mode, scale, peak=(i, j) in peak)
        out.append(styles)
    return out
