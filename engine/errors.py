"""Errors the engine raises for input it refuses, each worded in both languages."""

MAX_BYTES = 64 * 2**20  # no demo allocates more than this: a tour is no place to swap


class EngineError(ValueError):
    """A refused input; `text(lang)` says what is wrong and what is allowed."""

    def __init__(self, en: str, zh: str):
        super().__init__(en)
        self.en, self.zh = en, zh

    def text(self, lang: str) -> str:
        """The message in `lang` ("zh" or "en")."""
        return self.zh if lang == "zh" else self.en


class ParamError(EngineError):
    """A parameter outside what a view or config allows."""


class SizeError(EngineError):
    """A size whose arrays would pass MAX_BYTES, or a model too big for the memory there is."""


class FileError(EngineError):
    """A model file that is not one the engine can read, or not one the tour runs."""


class NoModel(EngineError):
    """No model file where one was named, or none at all (engine/real_llama.py find_model); `text(lang)` says which
    and what to do. The app, check-lessons and the layout check leave a real-model step out on it."""


def check_bytes(n_bytes: int, what_en: str, what_zh: str) -> None:
    """Refuse a demo whose arrays would pass MAX_BYTES; `what` names it in each language."""
    if n_bytes > MAX_BYTES:
        mib, limit = n_bytes / 2**20, MAX_BYTES // 2**20
        raise SizeError(
            f"{what_en} would allocate {mib:,.0f} MiB; the limit is {limit} MiB, choose smaller sizes",
            f"{what_zh}需要分配 {mib:,.0f} MiB，上限是 {limit} MiB，请把尺寸调小",
        )


def pick(table: dict, name, what_en: str, what_zh: str):
    """table[name], or a ParamError naming the choices: an unknown preset, view or lesson."""
    try:
        return table[name]
    except (KeyError, TypeError):
        names = ", ".join(map(str, table))
        raise ParamError(f"unknown {what_en} {name!r}; choose one of: {names}",
                         f"没有名为 {name!r} 的{what_zh}；可选：{names}") from None
