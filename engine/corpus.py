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
from dataclasses import dataclass

import numpy as np

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


@dataclass(frozen=True)
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


def sample(rng: np.random.Generator) -> Sentence:
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
