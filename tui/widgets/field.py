"""An Input whose editing keys keep the order they were typed in.

Textual's Input inserts a printable key as soon as it arrives, but runs a bound key (Backspace,
Delete, the arrows) only once the key has bubbled up to the app. On a busy machine, or over a slow
link that delivers several keys at once, a digit typed after Backspace can land first, and the
Backspace then deletes it: "32", Backspace, 4, 0 gave 324. This is Textual issue #6605; the fix
follows its pull request #6631: run the widget's own bindings as the key arrives.
"""

from textual import events
from textual.widgets import Input


class Field(Input):
    """A one-line input for the workbench."""

    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable:
            for binding in self._bindings.key_to_bindings.get(event.key, ()):
                if not binding.priority and await self.app.run_action(binding.action, self):
                    event.stop()
                    event.prevent_default()
                    return
        await super()._on_key(event)
