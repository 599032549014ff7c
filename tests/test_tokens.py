"""Tokens in, probabilities out: the BPE merges, encoding round trips, the vocabulary's share of the
parameters, and the per-position loss, each recomputed independently of the engine's code."""

from collections import Counter

import numpy as np
import pytest

import engine
from engine import bpe, corpus, llama, tiny
from engine.views import tokens


def facts(result):
    return {f.key: f.value for f in result.facts}


# --- BPE: merges pinned by hand, and against a from-scratch trainer -----------------------------

def test_merges_of_the_classic_example_worked_by_hand():
    """aaabdaaabac: aa occurs 4 times (overlaps count) -> 256; then ab and (256, a) tie at 2 and the
    smaller pair (97, 98) wins -> 257; then (256, 257) occurs twice -> 258; then every pair occurs once
    and the smallest, a c = (97, 99), wins."""
    assert bpe.train("aaabdaaabac", 4) == [(97, 97), (97, 98), (256, 257), (97, 99)]
    ids = bpe.encode("aaabdaaabac", bpe.train("aaabdaaabac", 3))
    assert ids == [258, 100, 258, 97, 99]  # X d X a c


def test_no_merge_crosses_a_chunk_and_training_stops_when_no_pair_is_left():
    """Chunks "ab", " ab", " ab": ab (3) -> 256, then (space, 256) (2) -> 257; "b " is never a pair."""
    assert bpe.train("ab ab ab", 10) == [(97, 98), (32, 256)]
    assert bpe.encode("ab ab ab", [(97, 98), (32, 256)]) == [256, 257, 257]


def naive_chunks(text):
    """The chunk rule written as a loop over character classes: an optional single space, then a run of
    letters, of decimal digits or of other symbols; or a run of whitespace."""
    def kind(c):
        if c.isspace():
            return "space"
        if c.isdecimal():
            return "digit"
        return "letter" if c.isalnum() else "symbol"
    out, i = [], 0
    while i < len(text):
        start = i
        if text[i] == " " and i + 1 < len(text) and kind(text[i + 1]) != "space":
            i += 1
        k = kind(text[i])
        while i < len(text) and kind(text[i]) == k:
            i += 1
        out.append(text[start:i])
    return out


def naive_train(text, n):
    """BPE recounting every pair from scratch before each merge; ties to the smallest pair."""
    seqs = [(list(chunk.encode("utf-8")), f) for chunk, f in Counter(naive_chunks(text)).items()]
    merges = []
    for m in range(n):
        counts = Counter()
        for s, f in seqs:
            for pair in zip(s, s[1:]):
                counts[pair] += f
        if not counts:
            break
        top = max(counts.values())
        pair = min(p for p, c in counts.items() if c == top)
        merges.append(pair)
        new = []
        for s, f in seqs:
            out, i = [], 0
            while i < len(s):
                if s[i:i + 2] == list(pair):
                    out.append(256 + m)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            new.append((out, f))
        seqs = new
    return merges


FIXED = ("The residual stream carries each token through every layer. Each layer adds to the stream, "
         "and the stream keeps its shape: 5 positions, 16 numbers. 残差流把每个词元带过每一层，每一层都往"
         "残差流里加一笔，残差流的形状不变。  Tabs\tand\nnewlines, d_model = 4096; __init__ 2024年!")


def test_incremental_training_equals_recounting_from_scratch():
    assert naive_chunks(FIXED) == bpe.chunks(FIXED)
    assert "".join(bpe.chunks(FIXED)) == FIXED
    merges = bpe.train(FIXED, 120)
    assert merges == naive_train(FIXED, 120)
    # " t" and e4 b8 (the first two bytes of 一, three times, 个 and 不) occur 5 times and " t" is the smaller
    # pair; then
    # " s", "ea" and "er", each 4 times, in the order of their ids ("re" too is 4, but loses the tie)
    assert merges[:5] == [(32, 116), (228, 184), (32, 115), (101, 97), (101, 114)]
    assert len(set(merges)) == len(merges)


def test_incremental_training_on_the_tours_prose_equals_recounting():
    en, zh = tokens.tour_text()
    text = (en + "\n" + zh)[:6000]
    assert bpe.train(text, 80) == naive_train(text, 80)


@pytest.mark.parametrize("m", [0, 50, 500])
@pytest.mark.parametrize("text", [*tokens.PAIRS["model"], *tokens.PAIRS["fox"],
                                  "注意力读取残差流。Attention reads the residual stream.\n", "emoji 🙂 and tabs\t."])
def test_encoding_round_trips_to_the_original_bytes(m, text):
    merges = tokens.tour_merges(m)
    ids = bpe.encode(text, merges)
    table = bpe.vocab(merges)
    assert b"".join(table[i] for i in ids) == text.encode("utf-8")
    assert bpe.decode(ids, merges) == text
    assert all(0 <= i < 256 + len(merges) for i in ids)
    if m == 0:
        assert ids == list(text.encode("utf-8"))


def test_the_tour_merges_are_the_prefix_of_one_training():
    assert tokens.tour_merges(1000)[:500] == tokens.tour_merges(500)
    assert len(tokens.tour_merges(500)) == 500


def test_the_bpe_view_counts_tokens_bytes_and_characters():
    r = engine.run_view("bpe", {"merges": "0", "pair": "model"})
    f = facts(r)
    en, zh = tokens.PAIRS["model"]
    assert (f["en_chars"], f["en_bytes"], f["en_tokens"]) == (len(en), len(en.encode()), len(en.encode()))
    assert (f["zh_chars"], f["zh_bytes"], f["zh_tokens"]) == (len(zh), 3 * len(zh), 3 * len(zh))
    r500 = facts(engine.run_view("bpe", {"merges": "500"}))
    assert r500["en_tokens"] < f["en_tokens"] and r500["zh_tokens"] < f["zh_tokens"]
    assert r500["n_vocab"] == 756


def test_a_token_cell_is_ascii_or_wide():
    assert tokens._shown("层".encode()) == "层"
    assert tokens._shown("层".encode()[:2]) == "<e5><b1>"
    assert tokens._shown("a→b".encode()) == "a<e2><86><92>b"  # an ambiguous-width arrow, as its bytes
    assert tokens._shown(b" \n") == " <0a>"


# --- the vocabulary's share of the parameters ---------------------------------------------------

def test_vocabulary_shares_match_the_figures():
    """Embedding + LM head over the published totals: 2 x 32,000 x 4,096 of 6,738,415,616 and
    2 x 128,256 x 4,096 of 8,030,261,248."""
    f = facts(engine.run_view("vocab-cost"))
    l2, l3 = 2 * 32000 * 4096 / 6_738_415_616, 2 * 128256 * 4096 / 8_030_261_248
    assert f["l2_share"] == pytest.approx(l2, rel=1e-12) and round(100 * f["l2_share"], 1) == 3.9
    assert f["l3_share"] == pytest.approx(l3, rel=1e-12) and round(100 * f["l3_share"], 1) == 13.1
    assert (f["l2_vocab"], f["l3_vocab"]) == (32000, 128256)
    assert f["grew"] == 8_030_261_248 - 6_738_415_616
    assert f["grew_vocab"] == 2 * (128256 - 32000) * 4096


def test_your_vocabulary_row_changes_only_the_vocabulary():
    r = engine.run_view("vocab-cost", {"vocab": "32000"})
    rows = r.tables[0].rows
    assert rows[2][1:2] + rows[2][3:] == rows[0][1:2] + rows[0][3:]
    f = facts(engine.run_view("vocab-cost", {"vocab": "256000"}))
    assert f["yours_total"] == 6_738_415_616 + 2 * (256000 - 32000) * 4096


# --- the final norm, the LM head, and the loss at each position ---------------------------------

def plain_logits(words):
    w, cfg, _ = tiny.load(tiny.RUNS["seed0"])
    ids = np.array([[corpus.INDEX["<bos>"]] + [corpus.INDEX[x] for x in words]])
    return llama.forward(w, ids, cfg.n_head)[0].astype(np.float64), w


def test_the_head_view_is_the_final_norm_then_the_head():
    prompt = "the cats near the dog"
    logits, w = plain_logits(prompt.split())
    p = np.exp(logits[-1] - logits[-1].max())
    p /= p.sum()
    r = engine.run_view("tiny-head", {"prompt": prompt})
    f, top = facts(r), r.tables[1].rows
    assert f["top"] == corpus.VOCAB[int(np.argmax(p))]
    np.testing.assert_allclose([row[3] for row in top], np.sort(logits[-1])[::-1][:5], atol=1e-4)
    np.testing.assert_allclose([row[4] for row in top], np.sort(p)[::-1][:5], atol=1e-6)
    assert (f["d_model"], f["n_vocab"]) == w["head"].shape
    assert f["rms_x"] > 1 and not f["ended"]


@pytest.mark.parametrize("sentence", ["the cat near the dogs sits .", "the cat near the dogs sit .",
                                      "the dogs chase the cat ."])
def test_per_position_loss_is_the_log_softmax_of_the_logits(sentence):
    words = sentence.split()
    logits, _ = plain_logits(words)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))  # [T, V]; these logits are small
    want = [-logp[i, corpus.INDEX[t]] for i, t in enumerate(words)]  # position i predicts words[i]
    r = engine.run_view("tiny-loss", {"sentence": sentence})
    rows = r.tables[0].rows
    assert [row[1:3] for row in rows] == list(zip(["<bos>"] + words[:-1], words))
    np.testing.assert_allclose([row[4] for row in rows], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose([row[3] for row in rows], np.exp(-np.array(want)), rtol=1e-6, atol=1e-9)
    f = facts(r)
    assert f["mean"] == pytest.approx(np.mean(want), rel=1e-6)
    assert f["floor"] == corpus.entropy_floor()[2]
    assert f["worst_pos"] == int(np.argmax(want)) and f["n"] == len(words)


def test_breaking_agreement_costs_most_at_the_verb():
    f = facts(engine.run_view("tiny-loss", {"sentence": "the cat near the dogs sit ."}))
    assert f["worst_next"] == "sit" and f["worst_loss"] > 5


# --- settings ----------------------------------------------------------------------------------

@pytest.mark.parametrize("view_id, settings", [
    ("bpe", {"merges": "-1"}), ("bpe", {"merges": "1001"}), ("bpe", {"merges": "2.5"}), ("bpe", {"pair": "xyz"}),
    ("vocab-cost", {"vocab": "0"}), ("vocab-cost", {"vocab": "many"}),
    ("tiny-head", {"prompt": "the unicorn"}), ("tiny-head", {"prompt": ""}),
    ("tiny-loss", {"sentence": "<bos> the cat"}), ("tiny-loss", {"sentence": " ".join(["the"] * 13)}),
])
def test_bad_settings_are_refused_in_both_languages(view_id, settings):
    with pytest.raises(engine.ParamError) as err:
        engine.run_view(view_id, settings)
    assert err.value.en and err.value.zh and err.value.zh != err.value.en


def test_the_shipped_merges_are_what_the_lessons_teach_now():
    """engine/data/bpe-merges.json must be learned from the lesson files as they are: after editing a
    lesson, rewrite it with `.venv/bin/python -m engine.views.tokens`."""
    import json
    data = json.loads(tokens.SHIPPED.read_text(encoding="utf-8"))
    assert data["lessons"] == tokens.lessons_fingerprint(), "stale: run .venv/bin/python -m engine.views.tokens"
    en, zh = tokens.tour_text()
    assert [tuple(p) for p in data["merges"]] == bpe.train(en + "\n" + zh, tokens.MAX_MERGES)
    assert (data["train_en"], data["train_zh"], data["train_bytes"]) == (
        len(en), len(zh), len((en + "\n" + zh).encode("utf-8")))


def test_edited_lessons_are_learned_again_not_read_from_the_stale_file(monkeypatch):
    monkeypatch.setattr(tokens, "lessons_fingerprint", lambda: "edited")
    monkeypatch.setattr(tokens, "_SHIPPED", {})
    monkeypatch.setattr(tokens, "_MERGES", {})
    assert tokens._shipped() is None
    en, zh = tokens.tour_text()
    assert tokens.tour_merges(50) == bpe.train(en + "\n" + zh, 500)[:50]
