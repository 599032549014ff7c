"""What the app shows, read as plain text from its widgets (under Pilot, no terminal)."""


def plain(content) -> str:
    """A widget's content (a rich Text, a Group of them, or a string) as plain text."""
    if hasattr(content, "renderables"):  # a rich Group
        return "\n".join(plain(r) for r in content.renderables)
    return str(getattr(content, "plain", content))


def screen_text(app) -> str:
    """Everything the lesson screen's widgets show, as plain text."""
    screen = app.lesson_screen()
    parts = [plain(screen.query_one(f"#{widget_id}").content)
             for widget_id in ("title", "page", "message", "keys", "small")]
    parts[2] = " ".join(parts[2].split())  # the message lines are wrapped prose: read them as one line
    return "\n".join(parts)


def message(app) -> str:
    """The lesson screen's message lines, read as one line."""
    return " ".join(str(app.lesson_screen().query_one("#message").content.plain).split())


def note(app) -> str:
    """The note under the typing line (tui/screens/editing.py)."""
    return str(app.lesson_screen().query_one("#editor-note").content.plain)


def settings(app) -> str:
    """The settings the footer shows, as name=value words, in its order."""
    first = plain(app.lesson_screen().query_one("#keys").content).splitlines()[0]
    return " ".join(word for word in first.split() if "=" in word)


def step_index(app, lesson_id: str, step_id: str) -> int:
    """The index of a step of a lesson, by their ids."""
    lesson = next(x for x in app.tour.lessons if x.id == lesson_id)
    return [s.id for s in lesson.steps].index(step_id)


def body_fits(app) -> tuple[bool, str]:
    """Whether the lesson screen shows its whole body: nothing to scroll, every table row inside the window."""
    screen = app.lesson_screen()
    body = screen.query_one("#body")
    lines = screen.query_one("#page")
    where = f"{app.tour.lang} {app.tour.lesson.id} {app.tour.page_id()} {app.tour.overrides()}"
    if body.max_scroll_y or body.max_scroll_x:
        return False, f"scrolls ({body.max_scroll_y} lines): {where}"
    if not body.content_region.contains_region(lines.region) or lines.region.height < len(lines._lines):
        return False, f"the body is cut off: {where}"
    return True, where
