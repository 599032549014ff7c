"""The learner's own input on the lesson screen: `e` opens one line in place of the message lines, where a
setting is typed as name=value (`d=300`, `prompt=50000`), or, on a step whose view reads a sentence or a
text (the tiny model's prompt, a BPE view's text), the sentence or text itself. Enter applies it and marks
what changed, as a key does; Esc closes the line unchanged. What is typed is data: it is checked by the
view's own parameter (the range of a number, the tiny grammar's words) and never parsed as markup; a control
character is refused, and the line holds at most MAX_TYPED characters.
"""

import difflib

from rich.text import Text
from textual.widgets import Input

from engine.errors import EngineError
from lessons.safe import UNSAFE
from lessons.template import TemplateError

from ..i18n import t

MAX_TYPED = 200  # characters the line holds: a paste is cut there, not queued (engine.views.core.MAX_TEXT)
WORDS = ("sentence", "text")  # the kinds of setting typed as they are, without name=


class Line(Input):
    """Textual's Input, but a paste longer than the room left is cut to fit, not refused whole; and a cursor that
    does not blink: over SSH each blink repaints the line, twice a second for as long as the line is open."""

    def on_mount(self) -> None:
        self.cursor_blink = False

    def replace(self, text: str, start: int, end: int) -> None:
        text = UNSAFE.sub("", text)  # a pasted control character never reaches the line, nor the terminal
        room = self.max_length - (len(self.value) - (end - start)) if self.max_length else len(text)
        super().replace(text[:max(room, 0)], start, end)


class Editing:
    """The typing part of LessonScreen. It needs, from the screen: `tour`, `say`, `redraw`, `_report_typed`."""

    editing = False  # whether the line is open

    def show_editor(self, on: bool) -> None:
        """The line in place of the message lines, or back. Each widget's display is set on its own: a class
        on the screen would restyle, and so repaint, every widget on it (9.6 KB over a pty, not 0.2)."""
        self.editing = on
        self.query_one("#editing").display = on
        self.query_one("#message").display = not on

    def open_editor(self) -> None:
        """Open the line, with what the step takes said below it."""
        from engine.views import get_view

        editor = self.query_one("#editor", Input)
        editor.value = ""
        self.show_editor(True)
        self.app.key_gate.typing(True)
        kinds = {p.kind for p in get_view(self.tour.step.view).params}
        hint = "edit_hint_sentence" if "sentence" in kinds else "edit_hint_text" if "text" in kinds else "edit_hint"
        self._edit_note(t(hint, self.tour.lang), "dim")
        editor.focus()

    def close_editor(self) -> None:
        self.show_editor(False)
        self.app.key_gate.typing(False)
        self.set_focus(None)

    def _names(self) -> list[str]:
        """The settings of the step's view, the sentence or text first: what the line takes."""
        from engine.views import get_view

        params = get_view(self.tour.step.view).params
        return [p.name for p in params if p.kind in WORDS] + [p.name for p in params if p.kind not in WORDS]

    def _edit_note(self, text: str, style: str) -> None:
        self.query_one("#editor-note").update(Text(text, style=style, no_wrap=True, overflow="crop"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Apply the line: a setting the view accepts closes it and marks the change; anything else is said
        below the line, which stays open with the text as typed."""
        if event.input.id != "editor":
            return
        event.stop()
        if event.value.strip().partition("=")[0].strip() == "weights":
            self._open_weights(event.value.strip().partition("=")[2].strip())
            return
        try:
            name, value = self._read(event.value)
            before = self.tour.result()
            was = before.params.get(name)
            self.tour.type_setting(name, value)
            try:
                self._fits(name)
            except (EngineError, ValueError):
                self.tour.untype(name, was)
                raise
        except EngineError as err:
            self._edit_note(err.text(self.tour.lang), "bold red")
            return
        except ValueError as err:
            self._edit_note(str(err), "bold red")
            return
        self.close_editor()
        self._report_typed(name, before, was)

    def _open_weights(self, path: str) -> None:
        """weights=FILE: the learner's own weights (xf-tour train), as run=yours in every trained-model view
        from now on, as --weights FILE does; a file that is not train's is said below the line. Only where the
        tour runs for whoever started it: a learner over SSH (--learner) or in a browser (serve) opens no file
        of the host's, and learns nothing of one."""
        lang = self.tour.lang
        if not self.app.open_files:
            self._edit_note(t("edit_weights_shared", lang), "bold red")
            return
        if not path or UNSAFE.search(path):
            self._edit_note(t("edit_weights_form", lang), "bold red")
            return
        try:
            before = self.tour.result()
            name = self.tour.open_weights(path)
        except EngineError as err:
            self._edit_note(err.text(lang), "bold red")
            return
        self.close_editor()
        try:
            after = self.tour.result()
        except EngineError as err:
            self._refused(err)
            return
        if "run" in after.params:
            self._report_typed("run", before, before.params.get("run"))
        else:
            self.say(tail=t("edit_weights_open", lang, name=name))

    def _fits(self, name: str) -> None:
        """Every step of the lesson whose view takes the setting typed (a typed value holds for the lesson, as a
        key's does), laid out as the screen lays it out at this window's size: EngineError when a view refuses
        it, ValueError when a step would not fit (one step, one screen holds for what is typed too) or its prose
        names a figure its view no longer has at that value."""
        from engine.views import get_view

        from .. import page

        tour, (w, h) = self.tour, self.app.size
        here = tour.step_index
        try:
            for i, step in enumerate(tour.lesson.steps):
                if i != here and name not in {p.name for p in get_view(step.view).params}:
                    continue
                tour.step_index = i
                try:
                    lines = page.build(tour, w, lit=tour.takes).lines
                except (KeyError, IndexError, TemplateError):
                    raise ValueError(t("edit_breaks", tour.lang, n=i + 1)) from None
                if lines > h:
                    raise ValueError(t("edit_too_big", tour.lang, n=i + 1, w=w, h=h))
        finally:
            tour.step_index = here

    def _read(self, raw: str) -> tuple[str, object]:
        """(setting, typed value) from what was typed; ValueError (a message in the tour's language) when it
        is none of what the step takes, EngineError when the view refuses the value."""
        from engine.views import get_view

        lang = self.tour.lang
        text = raw.strip()
        if UNSAFE.search(text):
            raise ValueError(t("edit_control", lang))
        if not text:
            raise ValueError(t("edit_empty", lang))
        view = get_view(self.tour.step.view)
        names = {p.name: p for p in view.params}
        sentences = [p for p in view.params if p.kind in WORDS]
        name, sep, value = text.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or (sentences and name not in names):  # the whole line is the sentence
            if not sentences:
                raise ValueError(t("edit_form", lang, names=", ".join(self._names())))
            name, value = sentences[0].name, text
        if name not in names:
            raise ValueError(t("edit_unknown", lang, name=name, names=", ".join(self._names())))
        param = names[name]
        if param.kind == "sentence":
            unknown = unknown_words(value)
            if unknown:
                raise ValueError(unknown_message(unknown[0], lang))
        return name, param.parse(value)


def unknown_words(text: str) -> list[str]:
    """The words of a sentence that the tiny grammar does not have, in order."""
    from engine.corpus import BOS, INDEX, PAD

    return [w for w in text.split() if w not in INDEX or w in (BOS, PAD)]


def unknown_message(word: str, lang: str) -> str:
    """'kitten' is not one of the tiny model's tokens, with the words it knows that are spelled most alike, or,
    when none is, its nouns (an unknown word is most often a noun)."""
    from engine.corpus import BOS, DOT, NOUNS, PAD, VOCAB

    words = [w for w in VOCAB if w not in (BOS, PAD, DOT)]
    near = difflib.get_close_matches(word.lower(), words, n=3, cutoff=0.6) or [pair[0] for pair in NOUNS[:4]]
    shown = word if len(word) <= 20 else word[:17] + "..."
    return t("edit_unknown_word", lang, word=shown, n=len(VOCAB), near=", ".join(near))


def typed_note(result, name: str, lang: str) -> str:
    """What the message line adds after a typed setting: which sentence a text stands in for; that the tiny
    grammar never makes a sentence typed, when it does not (the model meets it all the same)."""
    from engine.corpus import grammatical
    from engine.views import get_view
    from engine.views.tokens import side_of

    param = next((p for p in get_view(result.view).params if p.name == name), None)
    value = result.params.get(name)
    if param is not None and param.kind == "text" and value is not None:
        return t("edit_text_side_zh" if side_of(value) == "zh" else "edit_text_side_en", lang)
    if param is None or param.kind != "sentence" or grammatical(str(value).split())[0]:
        return ""
    return t("edit_odd", lang)
