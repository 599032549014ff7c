"""Sampling on the trained tiny Llama: the dist table against a plain loop reimplementation, the seeded samples,
the agreement table against greedy decoding recomputed here, and the settings the views refuse."""

import math

import numpy as np
import pytest

from engine import corpus, llama, tiny
from engine.errors import ParamError
from engine.views import sampling as views
from engine.views.core import get_view, run_view

SEED0 = tiny.load(tiny.RUNS["seed0"])


# --- a plain reimplementation, one token at a time --------------------------------------------

def ref_probs(logits, temperature, top_k, top_p):
    """Temperature, top-k, top-p, renormalise, written with loops. Ranking: logit high to low, then id low to high."""
    n = len(logits)
    ranked = sorted(range(n), key=lambda i: (-logits[i], i))
    if temperature == 0:
        p = [1.0 if i == ranked[0] else 0.0 for i in range(n)]
    else:
        top = max(logits)
        e = [math.exp((z - top) / temperature) for z in logits]
        p = [x / sum(e) for x in e]
    keep = set(ranked[:top_k]) if top_k else set(range(n))
    total = sum(p[i] for i in keep)
    p = [p[i] / total if i in keep else 0.0 for i in range(n)]
    if top_p < 1:
        nucleus, mass = set(), 0.0
        for i in ranked:
            if mass >= top_p:
                break
            nucleus.add(i)
            mass += p[i]
        keep &= nucleus
    if temperature == 0:  # greedy: one token left, whatever the filters allow
        keep = {ranked[0]}
    total = sum(p[i] for i in keep)
    return [p[i] / total if i in keep else 0.0 for i in range(n)], keep


def ref_logits(words):
    w, cfg, _ = SEED0
    ids = np.array([[corpus.INDEX[corpus.BOS]] + [corpus.INDEX[x] for x in words]])
    return [float(z) for z in llama.forward(w, ids, cfg.n_head)[0, -1]]


def by_key(result, key):
    return next(t for t in result.tables if t.key == key)


def fact(result, key):
    return next(f.value for f in result.facts if f.key == key)


SETTINGS = [dict(temperature=1.0, top_k=0, top_p=1.0), dict(temperature=0.0, top_k=0, top_p=1.0),
            dict(temperature=0.0, top_k=5, top_p=0.3), dict(temperature=0.7, top_k=0, top_p=0.9),
            dict(temperature=1.0, top_k=1, top_p=1.0), dict(temperature=2.0, top_k=4, top_p=1.0),
            dict(temperature=1.5, top_k=10, top_p=0.5), dict(temperature=5.0, top_k=0, top_p=0.01),
            dict(temperature=0.05, top_k=3, top_p=0.95)]


@pytest.mark.parametrize("prompt", ["the cat near the dogs", "the", "the big horses"])
@pytest.mark.parametrize("s", SETTINGS)
def test_dist_matches_a_loop_reimplementation(prompt, s):
    r = run_view("tiny-sample", dict(prompt=prompt, seed=0, **s))
    dist = by_key(r, "dist")
    assert len(dist.rows) == len(corpus.VOCAB) and {row[0] for row in dist.rows} == set(corpus.VOCAB)
    logits = ref_logits(prompt.split())
    p, keep = ref_probs(logits, s["temperature"], s["top_k"], s["top_p"])
    for token, logit, got in dist.rows:
        i = corpus.INDEX[token]
        assert logit == pytest.approx(logits[i], abs=1e-5)
        assert got == pytest.approx(p[i], abs=1e-9), (token, s)
        if i not in keep:
            assert got == 0.0
    assert sum(row[2] for row in dist.rows) == pytest.approx(1.0, abs=1e-12)
    assert [row[1] for row in dist.rows] == sorted((row[1] for row in dist.rows), reverse=True)
    assert fact(r, "survivors") == len(keep)
    h = -sum(x * math.log(x) for x in p if x > 0)
    assert fact(r, "entropy") == pytest.approx(h, abs=1e-9)
    filters = by_key(r, "filters")
    for row in filters.rows:  # a token cut by either filter gets p = 0
        if row[2].en == "cut" or row[3] == "-" or row[3].en == "cut":
            assert row[4] == 0.0


def test_temperature_zero_is_one_hot_on_the_argmax_and_top_k_1_agrees():
    logits = ref_logits("the cat near the dogs".split())
    best = int(np.argmax(logits))
    for s in (dict(temperature=0), dict(temperature=1.3, top_k=1), dict(temperature=2, top_p=1e-3)):
        r = run_view("tiny-sample", s)
        ps = {row[0]: row[2] for row in by_key(r, "dist").rows}
        assert ps[corpus.VOCAB[best]] == 1.0 and sum(ps.values()) == 1.0, s
        assert fact(r, "survivors") == 1 and fact(r, "entropy") == 0.0


def test_ties_go_to_the_lower_token_id():
    from engine import sampling
    logits = np.array([1.0, 3.0, 3.0, 3.0, 0.0, 3.0])
    for t, k, top_p in [(1.0, 2, 1.0), (0.0, 0, 1.0), (1.0, 0, 0.5), (1.0, 0, 0.3), (2.0, 3, 0.6), (1.0, 4, 0.99)]:
        got = sampling.final_probs(logits, t, k, top_p)
        want, _ = ref_probs(list(logits), t, k, top_p)
        np.testing.assert_allclose(got, want, atol=1e-12, err_msg=str((t, k, top_p)))
    assert list(np.flatnonzero(sampling.final_probs(logits, 1.0, 2, 1.0))) == [1, 2]
    assert list(np.flatnonzero(sampling.final_probs(logits, 1.0, 0, 0.3))) == [1, 2]  # 0.24 < 0.3: a second tie
    assert list(np.flatnonzero(sampling.final_probs(logits, 1.0, 0, 0.5))) == [1, 2, 3]  # 0.24 + 0.24 < 0.5: a third
    assert list(np.flatnonzero(sampling.final_probs(logits, 0.0, 0, 1.0))) == [1]
    even = np.zeros(4)  # p = 0.25 each, exactly: two tokens reach top_p = 0.5, and two are enough
    assert list(np.flatnonzero(sampling.final_probs(even, 1.0, 0, 0.5))) == [0, 1]
    assert list(np.flatnonzero(sampling.final_probs(even, 1.0, 0, 0.75))) == [0, 1, 2]


def test_draw_takes_the_first_token_whose_cumulative_p_exceeds_u():
    from engine import sampling
    p = np.array([0.0, 0.25, 0.0, 0.5, 0.25])
    for u, want in [(0.0, 1), (0.2499, 1), (0.25, 3), (0.7499, 3), (0.75, 4), (0.9999, 4)]:
        assert sampling.draw(p, u) == want, u
    rng = np.random.default_rng(0)
    for _ in range(200):
        q = rng.random(7) * (rng.random(7) > 0.4)
        q = q if q.sum() else np.ones(7)
        u = float(rng.random())
        acc, want = 0.0, None
        for j, x in enumerate(q):
            acc += x
            if acc > u * q.sum():
                want = j
                break
        assert sampling.draw(q, u) == want


def test_batched_rows_filter_like_single_rows():
    from engine import sampling
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(6, 20)).round(1)  # rounding makes ties
    for t, k, top_p in [(1.0, 5, 0.8), (0.0, 0, 1.0), (0.4, 0, 0.6), (3.0, 2, 0.2)]:
        batch = sampling.final_probs(logits, t, k, top_p)
        for row, z in zip(batch, logits):
            np.testing.assert_allclose(row, ref_probs(list(z), t, k, top_p)[0], atol=1e-12)


# --- seeded continuations ------------------------------------------------------------------

def ref_samples(prompt, seed, temperature, top_k, top_p, n=5):
    words = prompt.split()
    cap = corpus.MAX_LEN - len(words)
    u = np.random.default_rng(seed).random((n, cap))
    out = []
    for i in range(n):
        cont = []
        for t in range(cap):
            p, _ = ref_probs(ref_logits(words + cont), temperature, top_k, top_p)
            acc, pick = 0.0, len(p) - 1
            for j, x in enumerate(p):  # the first token, in vocabulary order, whose cumulative p exceeds u
                acc += x
                if acc > u[i, t] * sum(p):
                    pick = j
                    break
            cont.append(corpus.VOCAB[pick])
            if cont[-1] == corpus.DOT:
                break
        out.append(" ".join(cont))
    return out


@pytest.mark.parametrize("s", [dict(seed=0), dict(seed=5, temperature=2.0, top_p=0.9),
                               dict(seed=1, prompt="the", temperature=1.5, top_k=6)])
def test_samples_follow_the_documented_random_numbers(s):
    r = run_view("tiny-sample", s)
    values = get_view("tiny-sample").resolve(s)
    want = ref_samples(values["prompt"], values["seed"], values["temperature"], values["top_k"], values["top_p"])
    got = [row[1] if isinstance(row[1], str) else "" for row in by_key(r, "samples").rows]
    assert got == want
    assert [row[2] for row in by_key(r, "samples").rows] == [len(x.split()) for x in want]


def test_samples_repeat_for_a_seed_and_change_with_another():
    def texts(seed):
        return [row[1] for row in by_key(run_view("tiny-sample", dict(seed=seed, temperature=1.5)), "samples").rows]

    fresh = views._tiny_sample.__wrapped__("the cat near the dogs", 1.5, 0, 1.0, 4, "seed0")  # past the view's memo
    assert texts(4) == [row[1] for row in by_key(fresh, "samples").rows]
    assert texts(4) != texts(5)
    greedy = [row[1] for row in by_key(run_view("tiny-sample", dict(seed=4, temperature=0)), "samples").rows]
    assert len(set(greedy)) == 1


def test_a_prompt_ending_the_sentence_gets_no_continuation():
    r = run_view("tiny-sample", dict(prompt="the cat sat ."))
    assert all(row[2] == 0 for row in by_key(r, "samples").rows)


# --- agreement against temperature ---------------------------------------------------------

@pytest.mark.parametrize("run", ["seed0", "seed1"])
def test_agreement_at_temperature_zero_is_the_greedy_error_rate(run):
    w, cfg, _ = tiny.load(tiny.RUNS[run])
    batch = tiny.probe_sentences()  # drawn again; test_tiny checks the manifest keeps these very sentences
    assert len(batch) == tiny.PROBE_SENTENCES
    singular = {corpus.INDEX[a] for a, _ in corpus.INTRANSITIVE + corpus.TRANSITIVE}
    plural = {corpus.INDEX[b] for _, b in corpus.INTRANSITIVE + corpus.TRANSITIVE}
    wrong = right = 0
    hot_wrong = 0.0
    for ids, pos, good in zip(batch.ids, batch.verb_at, batch.good):
        z = llama.forward(w, ids[None, : pos + 1], cfg.n_head)[0, -1].astype(np.float64)
        ok, bad = (singular, plural) if good in singular else (plural, singular)
        best = int(np.argmax(z))
        right += best in ok
        wrong += best in bad
        e = np.exp(z - z.max())
        hot_wrong += sum(e[j] for j in bad) / e.sum()
    r = run_view("sample-agreement", dict(run=run, temperature=1))
    rows = by_key(r, "agreement").rows
    assert rows[0][0] == 0 and rows[2][0] == 1
    n = len(batch)
    assert rows[0][1] == pytest.approx(right / n, abs=1e-12)
    assert rows[0][2] == pytest.approx(wrong / n, abs=1e-12) == fact(r, "wrong_greedy")
    assert rows[2][2] == pytest.approx(hot_wrong / n, rel=1e-4) == pytest.approx(fact(r, "wrong_now"))
    for row in rows:
        assert sum(row[1:]) == pytest.approx(1.0, abs=1e-9)
    assert rows[0][2] <= rows[2][2] < rows[-1][2]  # heat makes the wrong form likelier


# --- settings the views refuse --------------------------------------------------------------

@pytest.mark.parametrize("view", ["tiny-sample", "sample-agreement"])
@pytest.mark.parametrize("name, value", [("temperature", -1), ("temperature", 6), ("top_p", 0), ("top_p", 1.5),
                                         ("top_k", -1), ("top_k", 2.5), ("temperature", "hot")])
def test_bad_settings_raise_param_error(view, name, value):
    with pytest.raises(ParamError) as err:
        run_view(view, {name: value})
    assert name in err.value.en and name in err.value.zh


def test_top_k_reaches_the_whole_vocabulary():
    assert get_view("tiny-sample").param("top_k").hi == len(corpus.VOCAB)
