"""A lesson's question asked on the lesson screen (tui/quiz.py): before a key acts, its letters (or a number typed
and Enter) answer it, Esc, n and p skip it, and after the key has acted the message lines reveal the answer."""

from engine.errors import EngineError

from ..i18n import t


class Asking:
    """The question part of LessonScreen: `asking` (a quiz.Posed waiting for an answer), `typed` (what is typed
    of a number), `revealed` ((posed, choice) until the next note), `_posing` (the key whose question waits on a
    slow view computing in a thread). LessonScreen draws the message lines with question_lines() and presses
    keys with _press()."""

    def question_lines(self) -> tuple[str, str, str] | None:
        """The message lines of the question waiting, or of the answer's reveal: (head, tail, style); None when
        there is neither."""
        from .. import quiz

        lang = self.tour.lang
        if self.asking is not None:
            head, tail = quiz.ask_lines(self.asking, lang)
            if self._note is not None:  # a typed text that is not a number
                return head, self._note[1], "bold red"
            return head, tail + (self.typed if self.asking.question.kind == "number" else ""), "italic"
        if self.revealed is not None:
            return (*quiz.reveal_lines(*self.revealed, lang), "italic")
        return None

    def _ask(self, key: str) -> bool:
        """Ask the step's question on `key`, if one waits; True when it is asked (the key acts once answered)."""
        from ..quiz import NotPosable

        question = self.tour.question_for(key)
        if question is None:
            return False
        run = self.tour.pose_run(question)
        if run is not None:  # a slow view at the value the key reaches: computed first, in a thread, then asked
            self._posing, self._note = key, ("", self.tour.computing_text(), "italic")
            if self._computing != run:
                self._computing = run
                self._compute(*run)
            self._draw_message(self.app.size.width)
            return True
        try:
            posed = self.tour.pose(question)
        except NotPosable:  # no single right answer at this setting: the key acts, unasked (check-lessons says so)
            return False
        self.asking, self.typed, self.revealed, self._note = posed, "", None, None
        self.redraw()
        return True

    def _ask_posed(self) -> None:
        """The slow view a question waited on is computed: press its key again, which asks it now."""
        key, self._posing, self._note = self._posing, None, None
        self.action_experiment(key)

    def on_key(self, event) -> None:
        """While a question waits, its keys answer it: a letter, or a number typed and Enter; Esc skips it.
        n, p, l, ? and q keep their meaning; every other key is held back."""
        if self.asking is None or event.key in ("n", "p", "right", "left", "l", "question_mark", "q", "ctrl+c"):
            return
        event.stop()
        event.prevent_default()
        posed, key = self.asking, event.key
        try:
            self._answer_key(posed, key, event.character)
        except EngineError as err:  # the value the key reaches is one the view refuses
            self._refused(err)
        except (KeyError, IndexError, ValueError) as err:  # a learner's own step that names what its view lacks
            self._broken(err, self.app.size.width)

    def _answer_key(self, posed, key: str, character: str | None) -> None:
        if key == "escape":
            self._skip_question(press=True)
        elif posed.question.kind != "number":
            if len(key) == 1 and key in "abcd"[:len(posed.options)]:
                self._answered(key)
        elif key == "enter":
            from ..quiz import typed_number
            if typed_number(self.typed) is None:
                self._note = ("", t("not_a_number", self.tour.lang, text=self.typed), "bold red")
                self.redraw()
            else:
                self._answered(self.typed.strip())
        elif key == "backspace":
            self.typed, self._note = self.typed[:-1], None
            self.redraw()
        elif character is not None and len(character) == 1 and character in "0123456789.eE+-," \
                and len(self.typed) < 24:
            self.typed, self._note = self.typed + character, None
            self.redraw()

    def _answered(self, choice: str) -> None:
        """Keep the answer, press the key, and show whether it was right."""
        from ..quiz import record

        posed = self.asking
        self.asking, self.typed = None, ""
        self.tour.progress.answer(posed.lesson, posed.question.id, record(posed, choice))
        self.app.save()
        self._press(posed.question.key)
        self.revealed = (posed, choice)
        self.redraw()

    def _skip_question(self, press: bool = False) -> None:
        """Count a waiting question as skipped; with `press`, its key then acts as if there were none."""
        posed = self.asking
        if posed is None:
            return
        from ..quiz import record

        self.asking, self.typed, self._note = None, "", None
        self.tour.progress.answer(posed.lesson, posed.question.id, record(posed, None))
        self.app.save()
        if press:
            self._press(posed.question.key)
