"""What lessons 10 and 11 claim: the loss in nats, bits and perplexity; the gap above the floor as
the reader can check it; which Chinese characters stay bytes and why; how generation stops; and sampling prose
that reads right at the edge settings (top_k=0, top_k=1, T=1) and never compares a setting with itself. Each
figure is recomputed here from its definition, not read back from the engine."""

import math
import re

import numpy as np
import pytest

from engine import bpe, corpus, sampling
from engine.views import run_view, tokens
from lessons.loader import applies, load_lessons
from tui.fill import fill


def _facts(result):
    return {f.key: f.value for f in result.facts}


def _table(result, key):
    return next(t for t in result.tables if t.key == key)


def _lesson(lesson_id):
    return next(lesson for lesson in load_lessons()[0] if lesson.id == lesson_id)


def _step(lesson, step_id):
    return next(s for s in lesson.steps if s.id == step_id)


# --- nats, bits, perplexity ----------------------------------------------------------------------

def test_the_floor_is_1_479_nats_2_13_bits_perplexity_4_39():
    """The grammar's entropy per token, recomputed as the chain rule gives it, in three units."""
    nats_per_sentence, tokens_per_sentence, floor = corpus.entropy_floor()
    assert floor == pytest.approx(nats_per_sentence / tokens_per_sentence)
    facts = _facts(run_view("tiny-loss", {}))
    assert f"{facts['floor']:.3f}" == "1.479"
    assert f"{facts['floor_bits']:.2f}" == "2.13"
    assert f"{facts['floor_ppl']:.2f}" == "4.39"
    assert facts["floor_bits"] == pytest.approx(floor / math.log(2))
    assert facts["floor_ppl"] == pytest.approx(math.exp(floor))


@pytest.mark.parametrize("sentence", ["the cat near the dogs sits .", "the cat sat on the mat ."])
def test_the_units_table_converts_each_mean_loss(sentence):
    result = run_view("tiny-loss", {"sentence": sentence})
    facts = _facts(result)
    rows = _table(result, "units").rows
    assert [r[1] for r in rows] == pytest.approx([facts["floor"], facts["unseen"], facts["mean"]])
    for _, nats, bits, ppl in rows:
        assert bits * math.log(2) == pytest.approx(nats)
        assert math.log(ppl) == pytest.approx(nats)
    assert facts["mean_ppl"] == pytest.approx(math.exp(np.mean([r[4] for r in _table(result, "loss").rows])))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_gap_above_the_floor_is_the_difference_of_the_figures_shown(lang):
    """The floor step prints 'unseen - floor = gap': the subtraction must hold for the digits on screen."""
    result = run_view("tiny-loss", {})
    text = fill(_step(_lesson("tokens"), "floor").text(lang), result, lang)
    a, b, gap = re.search(r"(\d+\.\d{3}) - (\d+\.\d{3}) = (\d+\.\d{3})", text).groups()
    assert (a, b) == (f"{_facts(result)['unseen']:.3f}", f"{_facts(result)['floor']:.3f}")
    assert round(float(a) - float(b), 3) == float(gap)
    assert "KL" in text and ("cross-entropy" in text or "交叉熵" in text)


# --- which Chinese characters stay bytes ----------------------------------------------------------

def _split_by_decoding(sentence, merges):
    """Characters not whole in any token: a token's bytes decoded, broken sequences dropped, give the characters
    it holds whole; the rest of the sentence's characters are split."""
    table = bpe.vocab(merges)
    whole = "".join(table[i].decode("utf-8", errors="ignore") for i in bpe.encode(sentence, merges))
    left = list(sentence)
    for c in whole:
        left.remove(c)
    return left


@pytest.mark.parametrize("pair", list(tokens.PAIRS))
@pytest.mark.parametrize("merges", [0, 50, 500])
def test_split_characters_are_those_no_token_holds_whole(pair, merges):
    facts = _facts(run_view("bpe", {"merges": merges, "pair": pair}))
    split = _split_by_decoding(tokens.PAIRS[pair][1], tokens.tour_merges(merges))
    assert facts["zh_split"] == len(split)
    assert facts["zh_split_any"] == bool(split)
    assert facts["zh_split_seen"] == max((tokens.tour_text()[1].count(c) for c in split), default=0)
    if merges == 0:
        assert facts["zh_split"] == facts["zh_chars"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_rare_step_names_the_characters_left_as_bytes(lang):
    """At the default setting the prose names exactly the split characters (预测 in the model sentence), and
    the reason it gives, their count in the training text, is the count there."""
    result = run_view("bpe", {})
    facts = _facts(result)
    text = fill(_step(_lesson("tokens"), "rare").text(lang), result, lang)
    split = _split_by_decoding(tokens.PAIRS["model"][1], tokens.tour_merges(500))
    assert "".join(dict.fromkeys(split)) in text
    assert f"{facts['zh_split_seen']:,}" in text
    at_zero = fill(_step(_lesson("tokens"), "rare").text(lang), run_view("bpe", {"merges": 0}), lang)
    assert f"{facts['zh_split_seen']:,}" not in at_zero or facts["zh_split_seen"] == 0


# --- sampling: labels and counts at the edge settings -----------------------------------------------

SETTINGS = [dict(temperature=t, top_k=k, top_p=p) for t in (1.0, 0.0, 2.0) for k in (0, 1, 3) for p in (1.0, 0.5)]
BROKEN = [r"\b1 tokens\b", r"\b1 are\b", r"\bthe 0 most\b", r"\bonly the 1 most\b", r"keeps 1 tokens",
          r"\b1 tokens pass\b", r"\(0: off\)"]


def _texts_at(lesson, step, settings, lang):
    """The step's prose and the hints of the keys that change it, filled at these settings."""
    view = run_view(step.view, {**step.params, **{k: v for k, v in settings.items() if k in _PARAMS[step.view]}})
    texts = [step.text(lang)] + [step.hint(e, lang) for e in lesson.experiments if applies(e, step)]
    return view, [fill(t, view, lang) for t in texts]


_PARAMS = {"tiny-sample": {"temperature", "top_k", "top_p", "seed", "run", "prompt"},
           "sample-agreement": {"temperature", "top_k", "top_p", "run"}}


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "T{temperature:g}-k{top_k}-p{top_p:g}".format(**s))
def test_sampling_prose_reads_right_at_every_edge_setting(settings):
    lesson = _lesson("sampling")
    for step in lesson.steps:
        view, texts = _texts_at(lesson, step, settings, "en")
        facts = _facts(view)
        for text in texts:
            for pattern in BROKEN:
                assert not re.search(pattern, text), (step.id, settings, pattern, text)
        if facts.get("filters_on") and step.id in ("temperature", "agreement"):
            assert "at T=1" not in texts[0], (step.id, settings)  # a filtered number is not 'at T=1'


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "T{temperature:g}-k{top_k}-p{top_p:g}".format(**s))
def test_as_raw_is_true_exactly_when_p_is_the_models_own(settings):
    result = run_view("tiny-sample", settings)
    p = np.array([r[2] for r in _table(result, "dist").rows])
    raw = sampling.apply_temperature(np.array([r[1] for r in _table(result, "dist").rows]), 1.0)
    assert _facts(result)["as_raw"] == bool(np.allclose(p, raw))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_temperature_step_never_compares_a_setting_with_itself(lang):
    """At T=1 with no filter p is the model's own: one entropy, no 'now X, then X'. With a filter on, the two
    figures differ and both are named."""
    step = _step(_lesson("sampling"), "temperature")
    own = run_view("tiny-sample", {})
    facts = _facts(own)
    text = fill(step.text(lang), own, lang)
    entropy = f"{facts['entropy']:.3f}"
    assert facts["as_raw"] and text.count(entropy) == 1
    filtered = run_view("tiny-sample", {"top_k": 3})
    f = _facts(filtered)
    text = fill(step.text(lang), filtered, lang)
    assert f"{f['entropy']:.3f}" != f"{f['entropy_raw']:.3f}"
    assert f"{f['entropy']:.3f}" in text and f"{f['entropy_raw']:.3f}" in text


@pytest.mark.parametrize("top_k, expected", [(0, "off, every token may be drawn."),
                                             (1, "only the most likely token may be drawn."),
                                             (3, "only the 3 most likely tokens may be drawn.")])
def test_the_top_k_key_says_what_it_does_at_0_1_and_3(top_k, expected):
    lesson = _lesson("sampling")
    key = next(e for e in lesson.experiments if e.key == "2")
    for view_id in ("tiny-sample", "sample-agreement"):
        assert fill(key.text("en"), run_view(view_id, {"top_k": top_k}), "en") == f"top_k={top_k}: {expected}"


# --- how generation stops ----------------------------------------------------------------------------

@pytest.mark.parametrize("temperature", [0.0, 1.0, 5.0])
def test_every_row_ends_with_the_eos_token_or_at_the_cap(temperature):
    result = run_view("tiny-sample", {"temperature": temperature})
    facts = _facts(result)
    rows = _table(result, "samples").rows
    assert facts["cap"] == corpus.MAX_LEN - len("the cat near the dogs".split())
    ended = [r for r in rows if str(r[1]).endswith(corpus.DOT)]
    capped = [r for r in rows if not str(r[1]).endswith(corpus.DOT)]
    assert facts["n_ended"] == len(ended) and facts["n_capped"] == len(capped)
    assert all(r[2] == facts["cap"] for r in capped)
    assert facts["n_ended"] + facts["n_capped"] == facts["n_samples"]
