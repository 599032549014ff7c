"""Screens of the xf-tour app."""

from textual.await_complete import AwaitComplete


class ClosesOnce:
    """For a screen that closes itself: dismiss() on a screen that is no longer the top one does nothing.
    A double click or a key typed twice lands twice before the first close is done, and each close pops
    the top screen: the second would pop the lesson under it, the app's first screen (ScreenStackError),
    or under the workbench of `xf-tour calc` the blank first screen (then nothing answers a key)."""

    def dismiss(self, result=None) -> AwaitComplete:
        if not self.is_active:
            return AwaitComplete.nothing()
        return super().dismiss(result)
