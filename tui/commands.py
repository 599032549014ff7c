"""The command palette (Ctrl+P): jump to any lesson or step."""

from functools import partial

from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider

from .i18n import t


class LessonCommands(Provider):
    """Every lesson, and every step of every lesson, as a palette command."""

    def _entries(self):
        tour = self.app.tour
        lang = tour.lang
        yield t("palette_workbench", lang), self.app.open_workbench
        if tour.lessons:
            yield t("palette_overview", lang), self.app.open_overview
        for lesson in tour.lessons:
            name = t("palette_lesson", lang, order=lesson.order, title=lesson.title(lang))
            yield name, partial(self.app.open_lesson, lesson.id, 0)
            for i, step in enumerate(lesson.steps):
                yield (t("palette_step", lang, lesson=name, title=step.title(lang)),
                       partial(self.app.open_lesson, lesson.id, i))

    async def discover(self) -> Hits:
        for name, run in self._entries():
            yield DiscoveryHit(name, run)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, run in self._entries():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), run)


class Palette(CommandPalette):
    """Textual's palette, minus one crash: in Textual 8.2, PageUp or PageDown pressed before the
    list of commands has been laid out raises KeyError in OptionList._move_page."""

    def _action_command_list(self, action: str) -> None:
        try:
            super()._action_command_list(action)
        except (KeyError, IndexError):
            pass  # nothing to page through yet
