"""Screens of the xf-tour app."""

from textual.await_complete import AwaitComplete


class ClosesOnce:
    """For a screen that closes itself: dismiss() on a screen that is no longer the top one does nothing.
    A double click or a key typed twice lands twice before the first close is done, and each close pops
    the top screen: the second would pop the lesson under it (a blank screen that answers no key), a
    third the last screen (ScreenStackError)."""

    def dismiss(self, result=None) -> AwaitComplete:
        if not self.is_active:
            return AwaitComplete.nothing()
        return super().dismiss(result)
