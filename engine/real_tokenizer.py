"""The tokenizer of a real model, built from a GGUF file's metadata: GPT-2's byte-level BPE (SmolLM, Llama 3), or
SentencePiece's BPE (Llama 2, TinyLlama, Mistral), at the end of this module.

engine/bpe.py learns its merges from the tour's own prose; a real model ships them. A GGUF file holds
    tokenizer.ggml.tokens      the vocabulary, id -> token, written in GPT-2's byte alphabet ("Ġthe" is b" the")
    tokenizer.ggml.merges      the merges in the order they were learned: "Ġ t", "Ġt he", ...
    tokenizer.ggml.token_type  1 normal, 2 unknown, 3 control (<|im_start|>, <|endoftext|>), 4 user-defined, 6 byte
    tokenizer.ggml.pre         the pre-tokenizer: the rule that cuts text into chunks no merge crosses
    tokenizer.ggml.bos_token_id, eos_token_id, add_bos_token

Encoding, as llama.cpp (src/llama-vocab.cpp) and Hugging Face's `tokenizers` do it:
 1. special tokens are cut out whole first: user-defined ones always, control ones only when the caller asks
    (special=True), so that a learner who types "<|im_end|>" gets the characters, not the token;
 2. each stretch between them is pre-tokenized into chunks (below);
 3. a chunk's UTF-8 bytes are written in the byte alphabet, one character per byte;
 4. the adjacent pair whose merge was learned earliest is merged, again and again, until no pair has a merge;
 5. each part is looked up in the vocabulary.
A byte the vocabulary lacks is dropped before step 4, so its neighbours may merge, as Hugging Face does for a BPE
without an unknown token (SmolLM2 lacks 21: 0x04, 0x06, 0x13, 0x14, 0x16, 0x1d and bytes that never occur in
UTF-8 or only in unassigned planes; llama.cpp stops with an error there).

The pre-tokenizers, from llama.cpp's llm_tokenizer_bpe (each regex runs on the pieces the one before left):
    gpt2, gpt-2 (llama.cpp's name)  's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
    smollm  \\p{N}, then the gpt2 regex on each stretch between digits: every digit is a chunk of its own, and a
            space before a digit is a chunk too ("a 12" -> "a", " ", "1", "2"). SmolLM2's tokenizer.json says
            the same: Sequence[Digits(individual_digits=True), ByteLevel(use_regex=True)].
    llama-bpe (and llama.cpp's other names for it: llama3, llama-v3, falcon3), Llama 3's:
            (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*
            |\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+
            contractions in either case, a word takes the one non-letter before it ("(x" and " x" alike), numbers
            in runs of at most three digits, newlines stay with what ends a line. And a chunk that is a token of
            its own is that token, unmerged (ignore_merges in Hugging Face's tokenizer.json; llama.cpp too).
(llama.cpp leaves out the last \\s+, keeping unmatched text as a piece of its own: the same chunks.)

Python's `re` has no \\p{L} or \\p{N}. So each character is first replaced by an ASCII stand-in for its class
(stand_in below), and the regex, written with ASCII classes, runs on the stand-ins; the chunks are cut from the
text at the same offsets. \\s means Unicode's White_Space, as in both references (str.isspace() would also take
\\x1c-\\x1f). Letters and numbers are read from Python's unicodedata, whose Unicode version may lag the
references' by a few new characters.
"""

import re
import unicodedata
from collections.abc import Mapping
from functools import lru_cache

from . import bpe
from .errors import EngineError

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6  # tokenizer.ggml.token_type values (5: unused)
WHITE_SPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                        "\u200a\u2028\u2029\u202f\u205f\u3000")  # Unicode's White_Space property, all 25
# GPT-2's regex over the stand-ins: a letter is a, a number 0, other whitespace \t, anything else !; ASCII is itself
GPT2_SPLIT = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+", re.ASCII)
LLAMA3_SPLIT = re.compile(r"'(?i:[st]|re|ve|m|ll|d)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]{1,3}| ?[^\sA-Za-z0-9]+[\r\n]*"
                          r"|\s*[\r\n]+|\s+(?!\S)|\s+", re.ASCII)
# pre-tokenizer -> (its regex, whether each digit is cut out first, whether a chunk that is a token stays whole)
PRE = {"gpt2": (GPT2_SPLIT, False, False), "gpt-2": (GPT2_SPLIT, False, False), "smollm": (GPT2_SPLIT, True, False),
       **dict.fromkeys(("llama-bpe", "llama3", "llama-v3", "falcon3"), (LLAMA3_SPLIT, False, True))}
DIGIT = re.compile("[0-9]")
SPACE_MARK = "␣"  # how piece() shows a space: U+2423, East Asian width N, one cell on every terminal


def byte_alphabet() -> list[str]:  # -> [256] str
    """GPT-2's byte alphabet: the character that stands for each byte in the vocabulary. Printable Latin-1 bytes
    stand for themselves; the other 68 (control bytes, space, 0x7f-0xa0, 0xad) are moved to chr(256 + k), in byte
    order, so a token is a printable string: the space is Ġ (chr(288)), the newline Ċ."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in kept]
    chars = {b: chr(b) for b in kept} | {b: chr(256 + k) for k, b in enumerate(moved)}
    return [chars[b] for b in range(256)]


BYTE_CHAR = byte_alphabet()
CHAR_BYTE = {c: b for b, c in enumerate(BYTE_CHAR)}


@lru_cache(maxsize=4096)
def stand_in(ch: str) -> str:
    """The ASCII character that stands for ch in the regex: ASCII as itself (there the classes agree); else
    "a" for a letter (L*), "0" for a number (N*), "\\t" for whitespace, "!" for anything else."""
    if ch < "\x80":
        return ch
    if ch in WHITE_SPACE:
        return "\t"
    kind = unicodedata.category(ch)[0]
    return "a" if kind == "L" else "0" if kind == "N" else "!"


def pre_tokenize(text: str, pre: str = "smollm") -> list[str]:  # str -> [n_chunk] str
    """The chunks no merge crosses, by the pre-tokenizer named (PRE); joined, they are the text again."""
    split, digits_first, _ = PRE[pre]
    classes = "".join(map(stand_in, text))
    chunks, start = [], 0
    for d in (m.start() for m in DIGIT.finditer(classes)) if digits_first else ():
        chunks += [text[m.start():m.end()] for m in split.finditer(classes, start, d)]  # d: as if text ended
        chunks.append(text[d])
        start = d + 1
    chunks += [text[m.start():m.end()] for m in split.finditer(classes, start)]
    return chunks


def bpe_merge(word: str, rank: Mapping[str, int]) -> list[str]:  # byte-alphabet chunk -> [n_part] tokens
    """A chunk's parts after BPE: merge the pair ranked first ("a b" -> rank), every occurrence left to right, until
    no adjacent pair is ranked."""
    parts = list(word)
    while len(parts) > 1:
        ranks = [rank.get(f"{a} {b}") for a, b in zip(parts, parts[1:])]
        best = min((r for r in ranks if r is not None), default=None)
        if best is None:
            return parts
        i = ranks.index(best)
        a, b = parts[i], parts[i + 1]
        merged, j = parts[:i], i
        while j < len(parts):
            if parts[j] == a and j + 1 < len(parts) and parts[j + 1] == b:
                merged.append(a + b)
                j += 2
            else:
                merged.append(parts[j])
                j += 1
        parts = merged
    return parts


class Tokenizer:
    """A byte-level BPE tokenizer: encode, decode, and each token as a table shows it."""

    def __init__(self, tokens: list[str], merges: list[str], types: list[int], pre: str = "gpt2",
                 bos_id: int | None = None, eos_id: int | None = None, add_bos: bool = False):
        if pre not in PRE:
            names = ", ".join(PRE)
            raise EngineError(f"this model's pre-tokenizer {pre!r} is not supported; supported: {names}",
                              f"不支持这个模型的预分词规则 {pre!r}；支持：{names}")
        self._take_vocab(tokens, types, bos_id, eos_id, add_bos)
        self.pre, self.whole = pre, PRE[pre][2]
        self.rank = {m: i for i, m in enumerate(merges)}  # "Ġ t" -> 0: the merge learned first ranks first
        for m in merges:
            a, _, b = m.partition(" ")
            if not a or not b or a + b not in self.ids:
                raise _malformed(f"the merge {m!r} does not make a token of the vocabulary")
        self._chunk_ids: dict[str, list[int]] = {}

    def _take_vocab(self, tokens, types, bos_id, eos_id, add_bos) -> None:
        if len(types) != len(tokens):
            raise _malformed(f"{len(tokens)} tokens but {len(types)} token types")
        self.tokens, self.types, self.bos_id, self.eos_id, self.add_bos = tokens, types, bos_id, eos_id, add_bos
        self.ids = {t: i for i, t in enumerate(tokens)}
        self.user = _alternation(t for t, kind in zip(tokens, types) if kind == USER_DEFINED)
        self.special = _alternation(t for t, kind in zip(tokens, types) if kind in (UNKNOWN, CONTROL, USER_DEFINED))

    @classmethod
    def from_metadata(cls, meta: Mapping[str, object]) -> "Tokenizer":
        """From a GGUF file's metadata, key -> value (arrays as lists): byte-level BPE for tokenizer.ggml.model
        "gpt2", SentencePiece for "llama"; EngineError, in one line, for any other."""
        model, key = meta.get("tokenizer.ggml.model"), "tokenizer.ggml."
        if model not in ("gpt2", "llama"):
            raise EngineError(f"this model's tokenizer {model!r} is not supported; supported: 'gpt2' (byte-level BPE) "
                              "and 'llama' (SentencePiece BPE)",
                              f"不支持这个模型的分词器 {model!r}；支持：'gpt2'（字节级 BPE）和 "
                              "'llama'（SentencePiece BPE）")
        try:
            tokens, types = list(meta[key + "tokens"]), list(meta[key + "token_type"])
            bos, eos = meta.get(key + "bos_token_id"), meta.get(key + "eos_token_id")
            add_bos = meta.get(key + "add_bos_token")
            if model == "llama":  # llama.cpp's defaults: BOS and the space prefix, unless the file says otherwise
                return SentencePiece(tokens, list(meta[key + "scores"]), types, bos, eos, add_bos in (None, True),
                                     bool(meta.get(key + "add_space_prefix", True)), meta.get(key + "unknown_token_id"))
            pre = str(meta.get(key + "pre", "gpt2"))
            return cls(tokens, list(meta[key + "merges"]), types, pre, bos, eos,
                       bool(add_bos) if add_bos is not None else pre in PRE and PRE[pre][2])  # Llama 3's: BOS
        except KeyError as e:
            raise _malformed(f"no {e.args[0]} in the file") from None

    def encode(self, text: str, special: bool = False) -> list[int]:  # str -> [n_seq] ids
        """The ids of text, BOS first when the model asks for it; special: "<|im_start|>" and the like are tokens."""
        ids = [self.bos_id] if self.add_bos and self.bos_id is not None else []
        pattern = self.special if special else self.user
        for k, piece in enumerate(pattern.split(text) if pattern else [text]):
            if k % 2:  # split() puts each match at the odd places
                ids.append(self.ids[piece])
            elif piece:
                ids += self._encode_text(piece)
        return ids

    def _encode_text(self, text: str) -> list[int]:  # text between special tokens -> [n] ids
        return [i for chunk in pre_tokenize(text, self.pre) for i in self._encode_chunk(chunk)]

    def _encode_chunk(self, chunk: str) -> list[int]:  # str -> [n_part] ids
        if chunk not in self._chunk_ids:
            if len(self._chunk_ids) >= 50_000:  # a learner's prompts repeat words; a pasted book should not grow this
                self._chunk_ids.clear()
            word = "".join(c for c in map(BYTE_CHAR.__getitem__, chunk.encode("utf-8")) if c in self.ids)
            parts = [word] if self.whole and word in self.ids else bpe_merge(word, self.rank)
            self._chunk_ids[chunk] = [self.ids[p] for p in parts]
        return self._chunk_ids[chunk]

    def token_bytes(self, i: int) -> bytes:
        """The bytes token i stands for: a special token's text as UTF-8, a normal token through the byte alphabet."""
        token = self.tokens[i]
        if self.types[i] in (CONTROL, USER_DEFINED) or not all(c in CHAR_BYTE for c in token):
            return token.encode("utf-8")
        return bytes(CHAR_BYTE[c] for c in token)

    def decode(self, ids: list[int]) -> str:  # [n_seq] ids -> str
        """The text of ids; bytes that are not whole UTF-8 characters become U+FFFD, as both references do."""
        return b"".join(map(self.token_bytes, ids)).decode("utf-8", errors="replace")

    def piece(self, i: int) -> str:
        """Token i as a table cell (bpe.shown): ASCII and wide characters as themselves, a space as ␣, anything
        else, from a control character to a byte of a split character, as its bytes in hex: "<e4>"."""
        return bpe.shown(self.token_bytes(i)).replace(" ", SPACE_MARK)


# --- SentencePiece ---------------------------------------------------------------------------------------------

def sp_merge(text: str, score: Mapping[str, float]) -> list[str]:  # text, "▁" for spaces -> [n_part] pieces
    """SentencePiece's BPE: start from the characters; merge the adjacent pair that makes the piece of highest
    score (the leftmost on a tie), again and again, until no pair makes a piece of the vocabulary."""
    parts = list(text)
    while len(parts) > 1:
        scores = [score.get(a + b) for a, b in zip(parts, parts[1:])]
        best = max((s for s in scores if s is not None), default=None)
        if best is None:
            return parts
        i = scores.index(best)
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


class SentencePiece(Tokenizer):
    """SentencePiece's BPE, as a GGUF file of tokenizer.ggml.model "llama" keeps it (Llama 2, TinyLlama, Mistral).

    No merges are stored: each piece has a score (tokenizer.ggml.scores, its log-probability in training), and the
    pair whose piece scores highest merges first. No pre-tokenizer either: a space is the piece "▁" (U+2581) and
    merges like any character, so "▁the" is a token. As llama.cpp and Hugging Face's Llama tokenizer do:
     1. special tokens are cut out whole first, as for byte-level BPE;
     2. each stretch between them gets a space in front (add_space_prefix) and its spaces become "▁";
     3. sp_merge, from single characters;
     4. a piece that is no token, a character the vocabulary lacks, is written as its UTF-8 bytes, each the
        token "<0xXX>" (byte fallback; the unknown token where even that is missing).
    BOS comes first unless the file says not (tokenizer.ggml.add_bos_token). Decoding keeps the space in front."""

    def __init__(self, tokens: list[str], scores: list[float], types: list[int], bos_id: int | None = None,
                 eos_id: int | None = None, add_bos: bool = True, add_space_prefix: bool = True,
                 unk_id: int | None = None):
        self._take_vocab(tokens, types, bos_id, eos_id, add_bos)
        if len(scores) != len(tokens):
            raise _malformed(f"{len(tokens)} tokens but {len(scores)} scores")
        self.pre, self.add_space_prefix, self.rank = "sentencepiece", add_space_prefix, {}
        self.score = {t: float(s) for t, s, kind in zip(tokens, scores, types) if kind in (NORMAL, USER_DEFINED)}
        self.byte_ids = [self.ids.get(f"<0x{b:02X}>", unk_id) for b in range(256)]

    def _encode_text(self, text: str) -> list[int]:  # text between special tokens -> [n] ids
        text = ("▁" if self.add_space_prefix else "") + text.replace(" ", "▁")
        ids = []
        for part in sp_merge(text, self.score):
            if part in self.score:
                ids.append(self.ids[part])
            else:  # byte fallback
                ids += [self.byte_ids[b] for b in part.encode("utf-8") if self.byte_ids[b] is not None]
        return ids

    def token_bytes(self, i: int) -> bytes:
        """The bytes token i stands for: a byte token's byte, a piece's text with "▁" as a space, a special
        token's text."""
        token = self.tokens[i]
        if self.types[i] == BYTE and re.fullmatch("<0x[0-9A-Fa-f]{2}>", token):
            return bytes([int(token[3:5], 16)])
        return (token.replace("▁", " ") if self.types[i] == NORMAL else token).encode("utf-8")


def _alternation(words) -> re.Pattern | None:
    """One regex matching any of words, the longest first where several start at the same place; None for none."""
    words = sorted(set(words), key=len, reverse=True)
    return re.compile("(" + "|".join(map(re.escape, words)) + ")") if words else None


def _malformed(what: str) -> EngineError:
    return EngineError(f"the model file's tokenizer is malformed: {what}", f"模型文件里的分词器已损坏：{what}")
