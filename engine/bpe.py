"""Byte-level byte-pair encoding (BPE): how text becomes token ids.

A text is its UTF-8 bytes, so the first 256 ids are the 256 byte values and no text is ever
unknown. Training repeats one step: find the adjacent pair of ids that occurs most often, give it a
new id, and replace it everywhere. The ordered list of merges is the tokenizer: encoding replays
them. As GPT-2's and Llama 3's tokenizers do, the text is first cut into chunks (a word with its
leading space, a run of digits, a run of punctuation, a run of whitespace), and no merge crosses a
chunk's edge. Ties between equally frequent pairs go to the smaller pair of ids, so training is
deterministic.
"""

import heapq
import re
import unicodedata
from collections import Counter, defaultdict

N_BYTES = 256  # ids 0..255 are the byte values; merge i makes id 256 + i

# " ?letters" | " ?digits" | " ?punctuation" | whitespace. Chinese characters are letters to `re`, so a run
# of them up to the next punctuation mark is one chunk. Every character falls in one class: nothing is lost.
CHUNK = re.compile(r" ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+")


def chunks(text):  # str -> [n_chunk] str
    """The text cut into chunks that no merge crosses; joined, they are the text again."""
    return CHUNK.findall(text)


def pair_counts(words, freqs):  # [n_word] lists of ids, [n_word] ints -> {(a, b): count}
    """How often each adjacent pair of ids occurs, each word counted freq times."""
    counts = Counter()
    for ids, f in zip(words, freqs):
        for pair in zip(ids, ids[1:]):
            counts[pair] += f
    return counts


def merge(ids, pair, new):  # [n] ids, (a, b), int -> [<= n] ids
    """Replace each occurrence of pair, left to right, by the id new."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def train(text, n_merges):  # str, int -> [<= n_merges] (a, b) pairs; merge i makes id 256 + i
    """The first n_merges merges BPE learns from text: each time the most frequent pair, ties to the smallest.

    Incremental: the distinct chunks are counted once; a merge then revisits only the chunks that hold
    its pair, and a heap keeps the pair counts ordered (an entry whose count has since changed is skipped)."""
    freq = Counter(chunks(text))
    words = [list(chunk.encode("utf-8")) for chunk in freq]
    freqs = list(freq.values())
    counts = pair_counts(words, freqs)
    where = defaultdict(set)  # pair -> indices of the words that hold it (or held it once)
    for w, ids in enumerate(words):
        for pair in zip(ids, ids[1:]):
            where[pair].add(w)
    heap = [(-n, pair) for pair, n in counts.items()]
    heapq.heapify(heap)
    merges = []
    while heap and len(merges) < n_merges:
        neg, pair = heapq.heappop(heap)
        if counts.get(pair, 0) != -neg or -neg <= 0:
            continue  # stale: the count changed after this entry was pushed
        new = N_BYTES + len(merges)
        merges.append(pair)
        changed = set()
        for w in where.pop(pair):  # any order: each word only adds to and takes from the counts
            words[w] = _merge_counting(words[w], pair, new, freqs[w], counts, changed, where, w)
        for p in changed:
            if counts[p] > 0:
                heapq.heappush(heap, (-counts[p], p))
            else:
                counts.pop(p)
    return merges


def _merge_counting(ids, pair, new, f, counts, changed, where, w):  # [n] ids -> [<= n] ids
    """merge(), keeping counts right as it goes: each occurrence changes only the pairs at its two edges.

    Before each occurrence the counts describe out + ids[i:]; replacing a b by new turns (left, a) into
    (left, new) and (b, right) into (new, right), and removes (a, b) itself."""
    a, b = pair
    out, i, n = [], 0, len(ids)
    while True:
        try:
            j = ids.index(a, i)  # jump to the next a: long chunks (a clause of Chinese) hold few
        except ValueError:
            out += ids[i:]
            return out
        if j + 1 == n or ids[j + 1] != b:
            out += ids[i:j + 1]
            i = j + 1
            continue
        out += ids[i:j]
        counts[pair] -= f
        if out:  # the left edge: (left, a) becomes (left, new)
            gone, made = (out[-1], a), (out[-1], new)
            counts[gone] -= f
            counts[made] += f
            where[made].add(w)
            changed.add(gone)
            changed.add(made)
        if j + 2 < n:  # the right edge: (b, right) becomes (new, right)
            gone, made = (b, ids[j + 2]), (new, ids[j + 2])
            counts[gone] -= f
            counts[made] += f
            where[made].add(w)
            changed.add(gone)
            changed.add(made)
        out.append(new)
        i = j + 2


def encode(text, merges):  # str, [n_merges] pairs -> [n_token] ids
    """Token ids of text: each chunk's bytes, then the merges replayed, the earliest-learned first."""
    rank = {pair: i for i, pair in enumerate(merges)}
    out = []
    for chunk in chunks(text):
        ids = list(chunk.encode("utf-8"))
        while len(ids) > 1:
            pair = min(zip(ids, ids[1:]), key=lambda p: rank.get(p, len(rank)))
            if pair not in rank:
                break
            ids = merge(ids, pair, N_BYTES + rank[pair])
        out += ids
    return out


def vocab(merges):  # [n_merges] pairs -> [256 + n_merges] bytes
    """The bytes each id stands for."""
    table = [bytes([b]) for b in range(N_BYTES)]
    for a, b in merges:
        table.append(table[a] + table[b])
    return table


def decode(ids, merges):  # [n_token] ids -> str
    """The text back from its ids."""
    table = vocab(merges)
    return b"".join(table[i] for i in ids).decode("utf-8")


def readable(piece):  # bytes -> str
    """A token's bytes as text: whole UTF-8 characters as themselves, a byte of a split character as <e4>."""
    out, i = [], 0
    while i < len(piece):
        for n in (1, 2, 3, 4):
            if i + n <= len(piece):
                try:
                    out.append(piece[i:i + n].decode("utf-8"))
                except UnicodeDecodeError:
                    continue
                i += n
                break
        else:
            out.append(f"<{piece[i]:02x}>")
            i += 1
    return "".join(out)


FILLERS = frozenset("\u115f\u1160\u3164\uffa0")  # Hangul fillers: letters that draw nothing


def shown(piece: bytes) -> str:  # bytes -> str
    """A token's bytes as a table cell, each character one cell or two on every terminal: printable ASCII and wide
    characters (CJK) as themselves; anything else (a byte of a split character, a control character, a mark, a
    modifier such as a skin tone, a filler, a space other than ASCII's, a character whose width depends on the
    terminal) as its bytes in hex, <e4>."""
    out = []
    for ch in readable(piece):
        kind = unicodedata.category(ch)
        wide = unicodedata.east_asian_width(ch) in "WF" and kind[0] not in "CMZ" and kind != "Sk" and ch not in FILLERS
        out.append(ch if " " <= ch <= "~" or wide else "".join(f"<{b:02x}>" for b in ch.encode("utf-8")))
    return "".join(out)
