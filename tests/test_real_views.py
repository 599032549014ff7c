"""The real model (SmolLM2-135M, fetched once as a learner fetches it) through the tour's own forward and views: its
logits against transformers' (tests/fixtures/smollm2_logits.json, made by an independent route), and the figures the
real-model views give. Without a model, each view refuses in one line that says how to get one."""

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.cli import run_cli
from helpers.marks import REAL_MODEL
from rich.cells import cell_len

import engine
from engine.views import real

pytestmark = list(REAL_MODEL)
FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "smollm2_logits.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", sorted(FIXTURE["cases"]))
def test_the_logits_are_transformers_own_within_1e_3(case):
    """The last position's logits for the reference's own token ids: the top 20 ids in order, their logits, every
    `stride`-th logit, the norm and the mean of all of them, within 1e-3 of transformers' float32 forward."""
    ref = FIXTURE["cases"][case]
    model, _ = real.model_and_tokenizer()
    z = model.forward(np.array(ref["ids"]))[-1].astype(np.float64)  # [V]
    top = np.argsort(-z, kind="stable")[:len(ref["top_ids"])]
    assert top.tolist() == ref["top_ids"]
    np.testing.assert_allclose(z[top], ref["top_logits"], atol=1e-3)
    np.testing.assert_allclose(z[::FIXTURE["stride"]], ref["strided_logits"], atol=1e-3)
    assert abs(np.linalg.norm(z) - ref["norm"]) < 1e-2 and abs(z.mean() - ref["mean"]) < 1e-3


def facts(view_id, **settings):
    result = engine.run_view(view_id, {k: str(v) for k, v in settings.items()})
    return {f.key: f.value for f in result.facts}, result


def test_the_count_by_tensors_is_the_formulas():
    f, result = facts("real-params")
    assert f["params_tensors"] == f["params_formula"] == 134_515_008 and f["params_equal"]
    assert (f["n_layer"], f["d_model"], f["n_head"], f["n_kv_head"], f["d_head"], f["d_ff"], f["n_vocab"]) == \
        (30, 576, 9, 3, 64, 1536, 49152) and f["tied"]
    kinds = {row[0]: row for row in result.tables[0].rows}
    assert kinds["blk.N.attn_k.weight"][1:4] == ("192x576", 110_592, 30)  # 3 K/V heads of 64: GQA's smaller k
    assert sum(row[4] for row in kinds.values()) == f["params_tensors"]


def test_the_prompt_says_paris():
    f, result = facts("real-next")
    assert f["top"] == "␣Paris" and f["top_p_raw"] == pytest.approx(0.7725, abs=1e-3) and f["n_tokens"] == 5
    assert [row[1] for row in result.tables[0].rows][:3] == [7042, 260, 4528]
    greedy, result = facts("real-next", temperature=0)
    assert greedy["top_final"] == 1.0 and greedy["left"] == 1
    top5, result = facts("real-next", top_k=5)
    assert top5["left"] == 5 and sum(row[3] for row in result.tables[0].rows) == pytest.approx(1.0)


def test_digits_one_by_one_and_chinese_as_bytes():
    f, result = facts("real-tokens", prompt="In 2024")
    assert [row[2] for row in result.tables[0].rows] == ["In", "␣", "2", "0", "2", "4"]
    f, result = facts("real-tokens", prompt="法国")
    assert f["byte_pieces"] >= 1 and f["n_bytes"] == 6
    assert f["digits_alone"] is True and f["digit_tokens"] == 7 and f["zh_in_bytes"] is True and f["bos"] is False
    f, _ = facts("real-tokens", prompt="<|im_start|> hi")  # typed, a special token's text is text, not bytes
    assert f["byte_pieces"] == 0


def test_the_attention_sink_and_a_previous_token_head():
    f, result = facts("real-attention", layer=16, head=0)
    assert f["sink_share"] > 0.5 and f["heads_counted"] == 28 * 9  # most heads from layer 3 on lean on token 0
    assert f["previous_best_weight"] > 0.6 and (f["previous_layer"], f["previous_head"]) == (17, 0)
    last, result_last = facts("real-attention", layer=-1, head=0)  # counted from the end: the 30th
    assert result_last.params["layer"] == 30 and last == facts("real-attention", layer=30, head=0)[0]
    with pytest.raises(engine.errors.ParamError, match="layer must be 1 to 30"):
        facts("real-attention", layer=0)
    assert f["group"] == 3 and f["kv_head"] == 0
    assert [row[1] for row in result.tables[1].rows] == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # the heads sharing each K/V


def test_the_massive_activation_at_position_0():
    f, result = facts("real-stream")
    assert f["first_max"] > 10_000 and f["ratio"] > 10 and 8 <= f["jump_layer"] <= 14
    jump, every = result.tables  # the rows the step shows, picked by the engine, and every layer's (t)
    assert len(every.rows) == 31 and set(jump.rows) <= set(every.rows)
    shown = [row[0] for row in jump.rows]  # the prose's numbers are in the rows shown: the jump, the largest norm
    assert f["jump_layer"] in shown and max(row[1] for row in jump.rows) == max(row[1] for row in every.rows)


def test_the_lens_finds_the_answer_only_at_the_last_layers():
    f, result = facts("real-lens")
    assert f["final"] == "␣Paris" and f["layers"] == 30 and f["first_layer"] >= 20
    rise, every = result.tables
    assert every.rows[-1][1] == "␣Paris" and f["first_layer"] in [row[0] for row in rise.rows]


def test_generation_is_seeded_and_greedy_repeats_itself():
    one, r1 = facts("real-generate", temperature=0, tokens=6)
    two, r2 = facts("real-generate", temperature=0, tokens=6)
    assert one["text"] == two["text"] and one["text"].startswith(" Paris")
    a, _ = facts("real-generate", seed=1, tokens=8)
    b, _ = facts("real-generate", seed=1, tokens=8)
    assert a["text"] == b["text"]
    assert one["rate"] > 0 and one["ceiling"] > 0


def test_without_a_model_each_view_says_how_to_get_one(monkeypatch, tmp_path):
    monkeypatch.delenv("XF_TOUR_MODEL")
    out = run_cli("print", "real-next", env={"XF_TOUR_STATE_DIR": str(tmp_path)})
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "xf-tour model get" in out.stderr
    out = run_cli("print", "real-next", "--lang", "zh", env={"XF_TOUR_STATE_DIR": str(tmp_path)})
    assert out.returncode == 2 and "xf-tour model get" in out.stderr and "还没有模型" in out.stderr


def test_the_real_lessons_questions_have_answers_and_its_plain_reading_fits():
    out = run_cli("quiz", "--lesson", "real", "--json")
    assert out.returncode == 0, out.stderr
    asked = json.loads(out.stdout)
    assert [q["id"] for q in asked] == ["digits-cost", "greedy-top", "previous-or-first"]
    assert all(q["problem"] is None and q["answer"] is not None for q in asked), asked
    for lang, word in (("en", "Answer: "), ("zh", "答案：")):
        out = run_cli("print", "--lesson", "real", "--lang", lang, "--answers")
        assert out.returncode == 0 and out.stdout.count(word) == 3, out.stderr
        assert max(cell_len(line) for line in out.stdout.splitlines()) <= 80


@pytest.mark.parametrize("question_id, lang",
                         [("digits-cost", "en"), ("greedy-top", "zh"), ("previous-or-first", "en")])
async def test_the_app_asks_each_question_of_the_real_lesson_and_grades_it(state, monkeypatch, question_id, lang):
    """A real-model step is computed in a thread; so is the value its key reaches, and then the question is asked
    (before, the app never asked on such a step). The answer the engine gives is graded right and kept."""
    from helpers.pilot import until
    from helpers.screen import message, step_index

    from tui import tour_state
    from tui.app import make_app

    monkeypatch.setattr(tour_state, "_CACHE", {})  # nothing computed yet in this process, whatever ran before
    app = make_app(lang=lang, lesson="real", state_dir=state, asks=True)
    async with app.run_test(size=(80, 24)) as pilot:
        question = next(q for q in app.tour.lesson.questions if q.id == question_id)
        app.tour.goto("real", step_index(app, "real", question.step))
        screen = app.lesson_screen()
        screen.arrived()
        await until(pilot, lambda: not app.tour.pending() and screen._computing is None)
        assert app.tour.pose_run(question) is not None  # the key's value is not computed yet
        await pilot.press(question.key)
        await until(pilot, lambda: screen.asking is not None or app._exception is not None)
        assert message(app).startswith("先预测" if lang == "zh" else "Predict"), message(app)
        expected = app.tour.pose(question)
        assert screen.asking == expected
        typed = f"{expected.truth:g}"  # a number question: the figure itself, typed, then Enter
        await pilot.press(*(list(typed) + ["enter"] if question.kind == "number" else [expected.answer]))
        await pilot.pause()
        record = json.loads((state / "progress.json").read_text(encoding="utf-8"))["answers"]["real"][question_id]
        assert record["right"] is True and screen.asking is None
        assert message(app).startswith("答对" if lang == "zh" else "Right"), message(app)
