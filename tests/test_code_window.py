"""What the code key shows: the engine's source as the file has it, with only the argument checks folded, and on
the model steps the reference forward (engine/llama.py)."""

import ast
import inspect
import textwrap

import pytest

from engine import llama
from engine.views import VIEWS
from tui.app import make_app
from tui.i18n import t
from tui.screens.code import fold_checks, functions, sources

NOTE = t("code_folded", "en")


def _statements(source: str) -> list[str]:
    """Each simple statement of a function (one with no body of its own), at every depth, as ast dumps it."""
    return [ast.dump(node) for node in ast.walk(ast.parse(textwrap.dedent(source)))
            if isinstance(node, ast.stmt) and not hasattr(node, "body")]


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_folding_leaves_out_only_argument_checks(view):
    """Every statement of the source is shown, except a check_bytes(...) call or an `if ...: raise ...`; each run
    of them is one comment line that says so; the folded text is still Python."""
    for f in functions(view):
        source = inspect.getsource(f)
        shown = fold_checks(source, NOTE)
        kept = _statements(shown)
        gone = list(_statements(source))
        for stmt in kept:
            gone.remove(stmt)
        for stmt in gone:  # a check_bytes(...) call, or the raise of an `if ...: raise ...`
            assert stmt.startswith(("Expr(value=Call(func=Name(id='check_bytes'", "Raise(")), (view, stmt[:120])
        assert shown.count("# " + NOTE) <= len(gone), view


def test_the_checks_a_window_used_to_show_are_folded():
    for view in ("residual", "rope", "attention", "heads", "norm-stack", "explain"):
        shown = sources(view, NOTE)
        assert "check_bytes" not in shown and "# " + NOTE in shown, view
        assert "check_bytes" in sources(view), view  # and they are in the file


@pytest.mark.parametrize("view", ["residual", "tiny-next", "tiny-attention", "tiny-verb", "tiny-head", "tiny-loss",
                                  "tiny-ablation"])
def test_the_model_steps_show_the_reference_forward(view):
    shown = functions(view)
    assert all(f in shown for f in llama.CODE), view
    text = sources(view, NOTE)
    for fast in ("Prefixes", "turn_pairs", "rope_turns", "training_pass"):
        assert fast not in text, (view, fast)


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_code_window_on_a_trained_model_step_reads_the_reference_forward(tmp_path, lang):
    """The attention lesson's trained-model step (tiny-verb): c opens the reference forward."""
    from textual.widgets import Static
    app = make_app(lang=lang, lesson="attention", state_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        while app.tour.step.view != "tiny-verb":
            await pilot.press("n")
            await pilot.pause()
        await pilot.press("c")
        await pilot.pause()
        code = app.screen.query_one("#code", Static)
        text = code.content.code  # the rich Syntax the window shows
        assert "def grouped_attention(x, wq, wk, wv, wo, n_head, n_kv_head,\n" in text
        assert "np.repeat(k, group, axis=-3)" in text
