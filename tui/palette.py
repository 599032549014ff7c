"""The command palette (Ctrl+P): its entries (the workbench, the overview, every lesson and every step)
and the palette screen itself.

Lesson and step titles come from lesson files, so every entry is handed to the palette as Content, which
Textual shows as it is: a title such as "[/]" or "[@click=app.quit]x" is text, never markup.
"""

from functools import partial

from textual.command import CommandPalette, DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from lessons.template import printable

from .i18n import t
from .screens import ClosesOnce


class LessonCommands(Provider):
    """Every lesson, and every step of every lesson, as a palette command."""

    def _entries(self):
        tour = self.app.tour
        lang = tour.lang
        yield t("palette_workbench", lang), self.app.open_workbench
        if tour.lessons:
            yield t("palette_overview", lang), self.app.open_overview
        for lesson in tour.lessons:
            name = t("palette_lesson", lang, order=lesson.order, title=printable(lesson.title(lang)))
            yield name, partial(self.app.open_lesson, lesson.id, 0)
            for i, step in enumerate(lesson.steps):
                yield (t("palette_step", lang, lesson=name, title=printable(step.title(lang))),
                       partial(self.app.open_lesson, lesson.id, i))

    async def discover(self) -> Hits:
        for name, run in self._entries():
            yield DiscoveryHit(Content(name), run, text=name)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, run in self._entries():
            score, offsets = matcher.fuzzy_search.match(matcher.query, name)
            if score > 0:
                yield Hit(score, _marked(name, offsets, matcher.match_style), run, text=name)


def _marked(name: str, offsets, style) -> Content:
    """The name as plain text with the matched letters styled: what Matcher.highlight does, except that
    it parses the name as markup first."""
    content = Content(name)
    for offset in offsets:
        if not name[offset].isspace():
            content = content.stylize(style, offset, offset + 1)
    return content


class Palette(ClosesOnce, CommandPalette):
    """Textual's palette, minus three crashes, in Textual 8.2: PageUp or PageDown pressed before the
    list of commands has been laid out raises KeyError in OptionList._move_page; a double or triple
    click outside it, or Enter twice, closed it more than once (see ClosesOnce); and a letter typed just
    before a click closed it started a search on the closing palette, whose list was gone (NoMatches)."""

    def _gather_commands(self, search_value: str):
        if self.is_active:  # else closing: nothing to search for
            return super()._gather_commands(search_value)

    def _action_command_list(self, action: str) -> None:
        try:
            super()._action_command_list(action)
        except (KeyError, IndexError):
            pass  # nothing to page through yet
