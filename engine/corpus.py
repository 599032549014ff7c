"""A small English grammar with subject-verb agreement across a distracting phrase.

  sentence    = <bos> the [adjective] subject [preposition the noun] verb-phrase .
  verb-phrase = present verb, agreeing with the subject [on/under/by the place]
              | present transitive verb, agreeing with the subject, the noun
              | past verb (no agreement) [on/under/by the place]

Every choice is independent and every sentence has exactly one derivation, so the entropy of the
sentence distribution, and with it the best loss any model can reach, is computed exactly by
summing the entropy of each choice. "the cat sat on the mat ." is one of its sentences.
"""

import math
import zlib

import numpy as np

from .records import fields, record

BOS, PAD, DOT, THE = "<bos>", "<pad>", ".", "the"
NOUNS = (("cat", "cats"), ("dog", "dogs"), ("bird", "birds"), ("fox", "foxes"), ("horse", "horses"),
         ("girl", "girls"), ("boy", "boys"))
ADJECTIVES = ("big", "small", "old", "young")
DISTRACTOR_PREPS = ("near", "with", "behind", "beside")
INTRANSITIVE = (("sits", "sit"), ("runs", "run"), ("sleeps", "sleep"), ("jumps", "jump"))
TRANSITIVE = (("sees", "see"), ("likes", "like"), ("chases", "chase"))
PAST = ("sat", "ran", "slept")
PLACE_PREPS = ("on", "under", "by")
PLACES = ("mat", "rug", "table", "box", "bed", "tree")

VOCAB = (PAD, BOS, THE, DOT, *[w for pair in NOUNS for w in pair], *ADJECTIVES, *DISTRACTOR_PREPS,
         *[w for pair in INTRANSITIVE for w in pair], *[w for pair in TRANSITIVE for w in pair], *PAST,
         *PLACE_PREPS, *PLACES)
INDEX = {w: i for i, w in enumerate(VOCAB)}
MAX_LEN = 12  # tokens after <bos>

# The probabilities of each choice. Numbers are 0 for singular, 1 for plural.
P_PLURAL = 0.5
P_ADJECTIVE = 0.4        # shared evenly by the adjectives
P_DISTRACTOR = 0.5
P_VERB = {"intransitive": 0.4, "transitive": 0.3, "past": 0.3}
P_PLACE = 0.5            # an intransitive or past verb takes "on the mat" and the like


@record
class Sentence:
    tokens: tuple[str, ...]   # after <bos>, ending with "."
    logp: float               # its probability under the grammar, in nats
    plural: int               # the subject's number
    verb_at: int | None       # index in tokens of an agreeing verb, None for a past verb
    distractor: int | None    # the distracting noun's number, None without one

    @property
    def mismatch(self) -> bool:
        """An agreeing verb after a distracting noun of the other number: the hard case."""
        return self.verb_at is not None and self.distractor is not None and self.distractor != self.plural

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


def _h(probs) -> float:
    return -sum(p * math.log(p) for p in probs if p > 0)


def entropy_floor() -> tuple[float, float, float]:
    """The grammar's exact entropy: (nats per sentence, expected tokens per sentence, nats per token).

    The chain rule over independent choices: each choice adds its own entropy, and each token it
    writes adds to the expected length. Agreement adds no entropy: the number fixes the verb form.
    """
    n_adj, n_noun = len(ADJECTIVES), len(NOUNS)
    h = _h([P_PLURAL, 1 - P_PLURAL])                                       # subject number
    h += _h([1 - P_ADJECTIVE] + [P_ADJECTIVE / n_adj] * n_adj)              # adjective or none
    h += math.log(n_noun)                                                   # subject noun
    length = 2 + P_ADJECTIVE + 1                                            # the [adj] noun ... .
    h += _h([1 - P_DISTRACTOR, P_DISTRACTOR])                               # distractor or none
    h += P_DISTRACTOR * (math.log(len(DISTRACTOR_PREPS)) + math.log(2) + math.log(n_noun))
    length += P_DISTRACTOR * 3                                              # near the dogs
    h += _h(P_VERB.values())                                                # kind of verb phrase
    place = _h([1 - P_PLACE, P_PLACE]) + P_PLACE * (math.log(len(PLACE_PREPS)) + math.log(len(PLACES)))
    h += P_VERB["intransitive"] * (math.log(len(INTRANSITIVE)) + place)
    h += P_VERB["transitive"] * (math.log(len(TRANSITIVE)) + math.log(2 * n_noun))
    h += P_VERB["past"] * (math.log(len(PAST)) + place)
    length += 1 + (P_VERB["intransitive"] + P_VERB["past"]) * P_PLACE * 3 + P_VERB["transitive"] * 2
    return h, length, h / length


def sample(rng: "np.random.Generator") -> Sentence:
    """One sentence from the grammar, with its log-probability."""
    logp, tokens = 0.0, [THE]

    def pick(options, probs=None):
        nonlocal logp
        probs = probs or [1 / len(options)] * len(options)
        u, i = rng.random(), 0
        while i < len(options) - 1 and u >= probs[i]:  # walk the cumulative distribution
            u -= probs[i]
            i += 1
        logp += math.log(probs[i])
        return options[i]

    plural = pick((0, 1), [1 - P_PLURAL, P_PLURAL])
    adjective = pick((None, *ADJECTIVES), [1 - P_ADJECTIVE] + [P_ADJECTIVE / len(ADJECTIVES)] * len(ADJECTIVES))
    if adjective:
        tokens.append(adjective)
    tokens.append(pick(NOUNS)[plural])
    distractor = None
    if pick((False, True), [1 - P_DISTRACTOR, P_DISTRACTOR]):
        tokens.append(pick(DISTRACTOR_PREPS))
        distractor = pick((0, 1))
        tokens += [THE, pick(NOUNS)[distractor]]
    kind = pick(tuple(P_VERB), list(P_VERB.values()))
    verb_at = len(tokens) if kind != "past" else None
    if kind == "transitive":
        tokens.append(pick(TRANSITIVE)[plural])
        tokens += [THE, pick(NOUNS)[pick((0, 1))]]
    else:
        tokens.append(pick(INTRANSITIVE)[plural] if kind == "intransitive" else pick(PAST))
        if pick((False, True), [1 - P_PLACE, P_PLACE]):
            tokens += [pick(PLACE_PREPS), THE, pick(PLACES)]
    tokens.append(DOT)
    return Sentence(tuple(tokens), logp, plural, verb_at, distractor)


def held_out(sentence: Sentence) -> bool:
    """One sentence in ten, chosen by a hash of its text, never appears in training."""
    return zlib.crc32(sentence.text.encode()) % 10 == 0


def draw(n: int, seed: int, split: str) -> list[Sentence]:
    """n sentences from the "train" or the "held-out" part of the grammar, reproducibly."""
    rng = np.random.default_rng([seed, 0 if split == "train" else 1])
    out = []
    while len(out) < n:
        s = sample(rng)
        if held_out(s) == (split == "held-out"):
            out.append(s)
    return out


def encode(sentences) -> np.ndarray:  # -> [n, MAX_LEN + 1] token ids, <bos> first, <pad> after "."
    """Token ids, padded."""
    ids = np.full((len(sentences), MAX_LEN + 1), INDEX[PAD], dtype=np.int64)
    for i, s in enumerate(sentences):
        ids[i, : len(s.tokens) + 1] = [INDEX[BOS]] + [INDEX[w] for w in s.tokens]
    return ids


def verb_pair(sentence: Sentence) -> tuple[int, int]:
    """(correct, wrong) token ids of the agreeing verb: the same verb in the other number."""
    verb = sentence.tokens[sentence.verb_at]
    for pair in INTRANSITIVE + TRANSITIVE:
        if verb in pair:
            return INDEX[verb], INDEX[pair[1 - pair.index(verb)]]
    raise ValueError(f"{verb!r} does not agree")


def parse(text: str) -> Sentence:
    """A sentence typed by a learner, checked against the vocabulary (not the grammar)."""
    words = tuple(text.split())
    unknown = [w for w in words if w not in INDEX or w in (BOS, PAD)]
    if not words or unknown or len(words) > MAX_LEN:
        raise ValueError(unknown[0] if unknown else text)
    plural, verb_at = 0, None
    for i, w in enumerate(words):
        for pair in NOUNS:
            if w in pair and plural == 0 and i <= 2:
                plural = pair.index(w)
        if verb_at is None and any(w in pair for pair in INTRANSITIVE + TRANSITIVE):
            verb_at = i
    return Sentence(words, float("nan"), plural, verb_at, None)


def _shapes() -> list[tuple[frozenset, ...]]:
    """Every sentence shape of the grammar as a sequence of slots, each the set of words that may stand there:
    the optional parts taken and left out, the verb agreeing with the subject. 40 shapes."""
    nouns = frozenset(w for pair in NOUNS for w in pair)
    the, dot, places = frozenset({THE}), frozenset({DOT}), frozenset(PLACES)
    place = [(frozenset(PLACE_PREPS), the, places)]
    shapes = []
    for number in (0, 1):
        subject = frozenset(pair[number] for pair in NOUNS)
        for adjective in ((), (frozenset(ADJECTIVES),)):
            for distractor in ((), (frozenset(DISTRACTOR_PREPS), the, nouns)):
                head = (the, *adjective, subject, *distractor)
                verbs = [((frozenset(v[number] for v in INTRANSITIVE),), place),
                         ((frozenset(v[number] for v in TRANSITIVE), the, nouns), []),
                         ((frozenset(PAST),), place)]
                for verb, tails in verbs:
                    for tail in ((), *tails):
                        shapes.append((*head, *verb, *tail, dot))
    return shapes


def grammatical(words) -> tuple[bool, bool]:
    """Whether the words begin a sentence the grammar makes, and whether they are one whole: a learner's own
    sentence may be neither, and the model meets it all the same."""
    words = tuple(words)
    begins = whole = False
    for shape in _SHAPES:
        if len(words) <= len(shape) and all(w in slot for w, slot in zip(words, shape)):
            begins = True
            whole = whole or len(words) == len(shape)
    return begins, whole


_SHAPES = _shapes()


# --- many sentences at once, as token ids ---------------------------------------------------
# Training reads tens of thousands of sentences; drawn one by one in Python they took a third of its
# time. Here every choice of a sentence has its own column of uniforms, used or not, so a draw is a
# few numpy operations over whole columns. The grammar and its probabilities are the ones above.

@record
class Batch:
    """Sentences as arrays: what training and evaluation read."""
    ids: np.ndarray       # [n, MAX_LEN + 1] token ids, <bos> first, <pad> after "."
    verb_at: np.ndarray   # [n] Sentence.verb_at: the position that predicts the agreeing verb; -1 for none
    good: np.ndarray      # [n] the verb's token id (the agreeing form), where verb_at >= 0
    bad: np.ndarray       # [n] the same verb in the other number
    mismatch: np.ndarray  # [n] Sentence.mismatch

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, part: slice) -> "Batch":
        return Batch(self.ids[part], self.verb_at[part], self.good[part], self.bad[part], self.mismatch[part])


def as_batch(sentences) -> Batch:
    """A Batch from Sentence objects (or a Batch, unchanged)."""
    if isinstance(sentences, Batch):
        return sentences
    verb_at = np.array([-1 if s.verb_at is None else s.verb_at for s in sentences], dtype=np.int64)
    pairs = [verb_pair(s) if s.verb_at is not None else (0, 0) for s in sentences]
    good, bad = (np.array([p[j] for p in pairs], dtype=np.int64).reshape(-1) for j in (0, 1))
    return Batch(encode(sentences), verb_at, good, bad, np.array([s.mismatch for s in sentences], dtype=bool))


def _ids(words) -> np.ndarray:
    return np.array([INDEX[w] for w in words], dtype=np.int64)


def _choose(u, probs) -> np.ndarray:  # [n] uniforms -> [n] indices, walking the cumulative distribution as pick does
    return (u[:, None] >= np.cumsum(probs)[None, :-1]).sum(1)


def sample_ids(rng: "np.random.Generator", n: int) -> Batch:
    """n sentences from the grammar, each choice from its own column of uniforms."""
    u = rng.random((n, 12))
    plural = _choose(u[:, 0], [1 - P_PLURAL, P_PLURAL])
    adjective = _choose(u[:, 1], [1 - P_ADJECTIVE] + [P_ADJECTIVE / len(ADJECTIVES)] * len(ADJECTIVES))
    nouns = np.stack([_ids(pair) for pair in NOUNS])  # [7, 2]: singular, plural
    has_dist = _choose(u[:, 3], [1 - P_DISTRACTOR, P_DISTRACTOR]).astype(bool)
    dist_num = _choose(u[:, 5], [0.5, 0.5])
    kind = _choose(u[:, 7], list(P_VERB.values()))  # 0 intransitive, 1 transitive, 2 past
    verbs = np.stack([_ids(pair) for pair in INTRANSITIVE + TRANSITIVE])  # [7, 2]: singular, plural
    which = np.where(kind == 0, _choose(u[:, 8], [1 / 4] * 4), 4 + _choose(u[:, 8], [1 / 3] * 3))
    agreeing = verbs[which, plural]
    verb = np.where(kind == 2, _ids(PAST)[_choose(u[:, 8], [1 / 3] * 3)], agreeing)
    has_place = (kind != 1) & _choose(u[:, 9], [1 - P_PLACE, P_PLACE]).astype(bool)
    none = -1
    slots = np.full((n, MAX_LEN + 1), none, dtype=np.int64)  # one column per place a word may go, then packed
    slots[:, 0] = INDEX[BOS]
    slots[:, 1] = INDEX[THE]
    slots[:, 2] = np.where(adjective > 0, _ids(("big",) + ADJECTIVES)[adjective], none)
    slots[:, 3] = nouns[_choose(u[:, 2], [1 / 7] * 7), plural]
    slots[:, 4] = np.where(has_dist, _ids(DISTRACTOR_PREPS)[_choose(u[:, 4], [1 / 4] * 4)], none)
    slots[:, 5] = np.where(has_dist, INDEX[THE], none)
    slots[:, 6] = np.where(has_dist, nouns[_choose(u[:, 6], [1 / 7] * 7), dist_num], none)
    slots[:, 7] = verb
    slots[:, 8] = np.where((kind == 1), INDEX[THE],
                           np.where(has_place, _ids(PLACE_PREPS)[_choose(u[:, 10], [1 / 3] * 3)], none))
    slots[:, 9] = np.where(kind == 1, nouns[_choose(u[:, 10], [1 / 7] * 7), _choose(u[:, 9], [0.5, 0.5])],
                           np.where(has_place, INDEX[THE], none))
    slots[:, 10] = np.where(has_place, _ids(PLACES)[_choose(u[:, 11], [1 / 6] * 6)], none)
    slots[:, 11] = INDEX[DOT]
    present = slots != none
    ids = np.full_like(slots, INDEX[PAD])
    ids[np.arange(MAX_LEN + 1) < present.sum(1)[:, None]] = slots[present]  # each row's words, in order, first
    verb_at = np.where(kind == 2, -1, 2 + (adjective > 0) + 3 * has_dist)
    return Batch(ids, verb_at, agreeing, verbs[which, 1 - plural], (kind != 2) & has_dist & (dist_num != plural))


_CRC_TABLES = []  # filled on first use by _crc_tables()


def _crc_tables() -> tuple[np.ndarray, np.ndarray]:
    """How each word moves a CRC-32: zlib.crc32(piece, c) for c with one byte set, per byte place, and for c = 0.

    A piece is the word and the space after it ("." ends the text, <pad> adds nothing). The CRC of a text
    is the CRC of its pieces in turn, crc32(b, crc32(a)) = crc32(a + b), and crc32(piece, c) is affine in c:
    crc32(piece, c) = crc32(piece, 0) ^ XOR over c's four bytes of (crc32(piece, byte << 8k) ^ crc32(piece, 0))."""
    if not _CRC_TABLES:
        pieces = [b"" if w == PAD else w.encode() + (b"" if w == DOT else b" ") for w in VOCAB]
        base = np.array([zlib.crc32(p, 0) for p in pieces], dtype=np.uint32)
        lin = np.array([[[zlib.crc32(p, v << (8 * k)) ^ zlib.crc32(p, 0) if p else v << (8 * k) for v in range(256)]
                         for k in range(4)] for p in pieces], dtype=np.uint32)  # [n_vocab, 4 byte places, 256]
        _CRC_TABLES.extend([base, lin])
    return _CRC_TABLES[0], _CRC_TABLES[1]


def held_out_ids(ids: np.ndarray) -> np.ndarray:  # [n, MAX_LEN + 1] -> [n] bool
    """held_out() for token ids: the CRC-32 of each sentence's text, a word column at a time."""
    base, lin = _crc_tables()
    crc = np.zeros(len(ids), dtype=np.uint32)
    for word in ids[:, 1:].T:  # [n] the j-th word of every sentence
        crc = base[word] ^ lin[word, 0, crc & 0xFF] ^ lin[word, 1, (crc >> 8) & 0xFF] \
            ^ lin[word, 2, (crc >> 16) & 0xFF] ^ lin[word, 3, crc >> 24]
    return crc % 10 == 0


def concat(batches) -> Batch:
    """One Batch of several, in order."""
    return Batch(*(np.concatenate([getattr(b, f) for b in batches]) for f in fields(Batch)))


def draw_ids(rng: "np.random.Generator", n: int, split: str) -> Batch:
    """n sentences from the "train" or the "held-out" part of the grammar, as arrays, drawn with rng.

    The same grammar as draw(), not the same sentences: the random numbers are used column by column."""
    parts, have = [], 0
    while have < n:  # one sentence in ten is held out: draw 1.15 or 12 times what is missing, rarely twice
        b = sample_ids(rng, max(1024, (n - have) * 23 // 20 if split == "train" else 12 * (n - have)))
        b = b[held_out_ids(b.ids) == (split == "held-out")]
        parts.append(b)
        have += len(b)
    return concat(parts)[:n]
