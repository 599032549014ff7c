"""The real model's tokenizer (engine/real_tokenizer.py): GPT-2's pattern and byte-level BPE on tiny vocabularies
worked by hand, then SmolLM2-135M-Instruct's against ids computed by Hugging Face's `tokenizers`
(tests/fixtures/make_smollm2_reference.py), and every token of it drawn safely in a table."""

import hashlib
import json
import lzma
import unicodedata
from pathlib import Path

import pytest
from rich.cells import cell_len

from bench.smollm import smollm_path
from engine import bpe, real_tokenizer as rt
from engine.errors import EngineError
from engine.gguf_file import GGUFFile
from engine.real_tokenizer import (
    BYTE_CHAR,
    CONTROL,
    USER_DEFINED,
    SentencePiece,
    Tokenizer,
    byte_alphabet,
    pre_tokenize,
)
from tui import model_file

FIXTURES = Path(__file__).parent / "fixtures"


def tiny(merges=(), specials=(), pre="smollm", drop="", **kw):
    """A vocabulary of the 256 byte characters (less those of `drop`), the token each merge makes, then `specials`
    as (text, type); merges are written as the text they join: "a b", "Ġ t"."""
    tokens = [c for c in BYTE_CHAR if c not in drop] + [m.replace(" ", "") for m in merges]
    types = [1] * len(tokens) + [kind for _, kind in specials]
    return Tokenizer(tokens + [t for t, _ in specials], list(merges), types, pre, **kw)


def parts(tok, ids):
    return [tok.tokens[i] for i in ids]


# --- GPT-2's byte alphabet and pattern ---------------------------------------------------------

def test_the_byte_alphabet_is_gpt2s():
    """Printable Latin-1 bytes stand for themselves; space is Ġ, newline Ċ, 0x7f ġ (the 68 others moved past 255)."""
    chars = byte_alphabet()
    assert len(set(chars)) == 256 and all(c.isprintable() and not c.isspace() for c in chars)
    assert (chars[ord("A")], chars[ord("é".encode("latin-1"))], chars[32], chars[10], chars[0x7f]) == \
        ("A", "é", "Ġ", "Ċ", "ġ")


def test_smollm_cuts_every_digit_apart_and_gpt2_keeps_runs():
    assert pre_tokenize("In 2024, 3.14") == ["In", " ", "2", "0", "2", "4", ",", " ", "3", ".", "1", "4"]
    assert pre_tokenize("In 2024, 3.14", "gpt2") == ["In", " 2024", ",", " 3", ".", "14"]
    assert pre_tokenize("x½²٣y") == ["x", "½", "²", "٣", "y"]  # every number of Unicode (N*), not only 0-9


@pytest.mark.parametrize("text, chunks", [
    ("I'm don't IT'S", ["I", "'m", " don", "'t", " IT", "'", "S"]),  # contractions are lower case only
    ("we'll they've she'd you're", ["we", "'ll", " they", "'ve", " she", "'d", " you", "'re"]),
    ("a  b", ["a", " ", " b"]),  # \s+(?!\S) leaves the last space to the word
    ("a  ", ["a", "  "]),
    ("a\n\nb", ["a", "\n", "\n", "b"]),
    ("a\n\n\tb c", ["a", "\n\n", "\t", "b", " c"]),
    ("café naïve Zürich", ["café", " naïve", " Zürich"]),  # letters of any script
    ("法国的首都是。", ["法国的首都是", "。"]),
    ("x = (y)!! 🦙🦙", ["x", " =", " (", "y", ")!!", " 🦙🦙"]),
    ("x\u00a0y\u3000z", ["x", "\u00a0", "y", "\u3000", "z"]),  # Unicode's White_Space is \s
    ("a \x1c", ["a", " \x1c"]),  # str.isspace() says \x1c is a space; White_Space does not
    ("a  2", ["a", "  ", "2"]),  # the digit is cut out first: the spaces end where a text would end
])
def test_the_pre_tokenizer_follows_gpt2s_pattern(text, chunks):
    assert pre_tokenize(text) == chunks
    assert "".join(chunks) == text


# --- BPE on tiny vocabularies ------------------------------------------------------------------

def test_the_earliest_merge_wins_whatever_its_place_in_the_word():
    assert parts(tiny(["b c", "a b"]), tiny(["b c", "a b"]).encode("abc")) == ["a", "bc"]
    assert parts(tiny(["a b", "b c"]), tiny(["a b", "b c"]).encode("abc")) == ["ab", "c"]
    tok = tiny(["a a", "aa a"])
    assert parts(tok, tok.encode("aaaa")) == ["aa", "aa"]  # left to right: (aa)(aa), never a(aaa)
    assert parts(tok, tok.encode("aaa")) == ["aaa"]


def test_merges_stay_inside_a_chunk_and_spaces_are_g():
    tok = tiny(["Ġ t", "h e", "Ġt he", "1 2"])
    assert parts(tok, tok.encode("the the")) == ["t", "he", "Ġthe"]
    assert parts(tok, tok.encode("12")) == ["1", "2"]  # digits are cut apart before any merge
    gpt2 = tiny(["1 2"], pre="gpt2")
    assert parts(gpt2, gpt2.encode("12")) == ["12"]


def test_special_tokens_are_whole_only_when_asked_and_user_defined_ones_always():
    tok = tiny(specials=[("<|im_start|>", CONTROL), ("<|im", USER_DEFINED), ("<x>", USER_DEFINED)])
    start, im, x = len(tok.tokens) - 3, len(tok.tokens) - 2, len(tok.tokens) - 1
    assert tok.encode("<|im_start|>a", special=True) == [start, tok.ids["a"]]  # the longest match first
    assert tok.encode("<|im_start|>a")[0] == im  # as text: only the user-defined prefix is a token
    assert tok.encode("b<x>", special=False) == [tok.ids["b"], x]
    for special in (False, True):
        assert tok.decode(tok.encode("<|im_start|>a<x>b", special=special)) == "<|im_start|>a<x>b"


def test_a_byte_the_vocabulary_lacks_is_dropped_and_bos_comes_when_the_model_asks():
    tok = tiny(["! ?"], drop=BYTE_CHAR[4])
    assert tok.decode(tok.encode("a\x04b")) == "ab"
    assert parts(tok, tok.encode("!\x04?")) == ["!?"]  # dropped before merging: its neighbours meet
    with_bos = tiny(bos_id=0, add_bos=True)
    assert with_bos.encode("a")[0] == with_bos.bos_id and tiny(bos_id=0).encode("a") == [tiny().ids["a"]]


@pytest.mark.parametrize("text", ["", "The capital of France is", "a  b\n\n\t c  ", "法国 🦙 naïve 2024 ½",
                                  "\x1b[31mred\x1b[0m", "\U0010fffd\ufeff\u200d"])
def test_decoding_gives_the_text_back(text):
    tok = tiny(["Ġ t", "h e", "Ġt he"])
    assert tok.decode(tok.encode(text)) == text


def test_an_unknown_tokenizer_pre_tokenizer_or_a_merge_without_its_token_is_refused_in_one_line_of_each_language():
    with pytest.raises(EngineError) as e:
        tiny(pre="qwen2")
    assert "qwen2" in e.value.en and "qwen2" in e.value.zh and "smollm" in e.value.en and "llama-bpe" in e.value.en
    with pytest.raises(EngineError, match="'a b'"):
        Tokenizer(list(BYTE_CHAR), ["a b"], [1] * 256)
    with pytest.raises(EngineError) as e:
        Tokenizer.from_metadata({"tokenizer.ggml.model": "bert"})
    assert "'bert'" in e.value.en and "'bert'" in e.value.zh and "'llama'" in e.value.en
    assert "\n" not in e.value.en + e.value.zh
    with pytest.raises(EngineError, match="no tokenizer.ggml.scores"):
        Tokenizer.from_metadata({"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": ["a"],
                                 "tokenizer.ggml.token_type": [1]})


# --- a piece as a table shows it -----------------------------------------------------------------

def test_a_piece_shows_spaces_bytes_and_control_characters_safely():
    tok = tiny(["Ġ t", "h e", "Ġt he", "Ã ©", "ä ¸"], specials=[("<|im_end|>", CONTROL)])
    shown = {t: tok.piece(tok.ids[t]) for t in ("Ġthe", "Ã©", "ä¸", "Ċ", "\u011b", "<|im_end|>")}
    assert shown == {"Ġthe": "␣the", "Ã©": "<c3><a9>", "ä¸": "<e4><b8>", "Ċ": "<0a>", "\u011b": "<1b>",
                     "<|im_end|>": "<|im_end|>"}


@pytest.mark.parametrize("ch, cell", [
    ("层", "层"), ("🦙", "🦙"), ("é", "<c3><a9>"), ("→", "<e2><86><92>"),  # ambiguous width: as bytes
    ("\u3000", "<e3><80><80>"), ("\u200d", "<e2><80><8d>"), ("\u0301", "<cc><81>"), ("\ufe0f", "<ef><b8><8f>"),
    ("\U0001f3fb", "<f0><9f><8f><bb>"), ("\u3164", "<e3><85><a4>"), ("\x7f", "<7f>"), ("\x85", "<c2><85>"),
])
def test_a_cell_holds_only_characters_of_a_known_width(ch, cell):
    assert bpe.shown(ch.encode()) == cell
    assert cell_len(cell) == sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in cell)


@pytest.mark.slow
def test_every_character_a_cell_keeps_has_the_width_rich_gives_it():
    """All of Unicode: what bpe.shown keeps as itself is printable ASCII (one cell) or wide (two)."""
    wrong = []
    for cp in (*range(0xD800), *range(0xE000, 0x110000)):
        ch = chr(cp)
        if bpe.shown(ch.encode()) == ch:
            want = 2 if unicodedata.east_asian_width(ch) in "WF" else 1
            if cell_len(ch) != want or (want == 1 and not " " <= ch <= "~"):
                wrong.append(f"U+{cp:04X}")
    assert not wrong


# --- SmolLM2-135M-Instruct against the reference ------------------------------------------------

REFERENCE = json.loads((FIXTURES / "smollm2_tokens.json").read_text(encoding="utf-8"))


def test_the_logits_fixture_was_made_from_the_reference_ids():
    logits = json.loads((FIXTURES / "smollm2_logits.json").read_text(encoding="utf-8"))
    assert logits["file_sha256"] == REFERENCE["file_sha256"] == model_file.SHA256
    cases = logits["cases"]
    assert {k: c["ids"] for k, c in cases.items()} == {k: REFERENCE["cases"][k]["ids"] for k in cases}
    assert logits["cases"]["english"]["top_ids"][0] == 7042  # " Paris"


@pytest.fixture(scope="module")
def smollm():
    return Tokenizer.from_metadata(GGUFFile(smollm_path()).metadata)


@pytest.mark.slow
def test_smollm2s_tokenizer_reads_its_file(smollm):
    assert (len(smollm.tokens), len(smollm.rank), smollm.pre) == (49152, 48900, "smollm")
    assert (smollm.bos_id, smollm.eos_id, smollm.add_bos) == (1, 2, False)
    assert smollm.tokens[1:3] == ["<|im_start|>", "<|im_end|>"]


@pytest.mark.slow
@pytest.mark.parametrize("name", REFERENCE["cases"])
def test_smollm2s_ids_equal_the_reference(smollm, name):
    case = REFERENCE["cases"][name]
    ids = smollm.encode(case["text"], special=case["special"])
    assert ids == case["ids"]
    lacking = dict.fromkeys(map(ord, "\x04\x06\x13\x14\x16\x1d"))  # characters of one byte its vocabulary lacks
    assert smollm.decode(ids) == case["decoded"] == case["text"].translate(lacking)


@pytest.mark.slow
def test_smollm2_reads_a_number_digit_by_digit(smollm):
    ids = smollm.encode("1,000,000 and 2024")
    assert [smollm.piece(i) for i in ids] == ["1", ",", "0", "0", "0", ",", "0", "0", "0", "␣and", "␣", "2", "0", "2",
                                              "4"]


@pytest.mark.slow
def test_every_piece_of_smollm2_is_safe_and_as_wide_as_tables_count(smollm):
    """No control character reaches the terminal, and rich measures each piece as tui's tables do."""
    pieces = [smollm.piece(i) for i in range(len(smollm.tokens))]
    unsafe = [p for p in pieces if any(unicodedata.category(c)[0] in "CZ" and c != " " for c in p)]
    assert not unsafe
    wrong = [p for p in pieces if cell_len(p) != sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in p)]
    assert not wrong
    assert "<1b>" in pieces and "␣the" in pieces  # ESC itself is in the vocabulary, and shown escaped


# --- Llama 3's pre-tokenizer and Llama 2's SentencePiece ------------------------------------------------------

@pytest.mark.parametrize("text, chunks", [
    ("I'M don't THEY'RE", ["I", "'M", " don", "'t", " THEY", "'RE"]),  # contractions in either case
    ("(hello) x", ["(hello", ")", " x"]),  # a word takes one non-letter before it, not only a space
    ("1234567 12", ["123", "456", "7", " ", "12"]),  # numbers in threes, and no space before them
    ("a  b\n\n  c", ["a", " ", " b", "\n\n", " ", " c"]),  # \s+(?!\S) leaves the last space to the word
    ("x;\n\ny", ["x", ";\n\n", "y"]),  # punctuation keeps the newlines that end its line
    ("法国的首都是。", ["法国的首都是", "。"]),
])
def test_llama3s_pre_tokenizer(text, chunks):
    assert pre_tokenize(text, "llama-bpe") == chunks


def test_llama3_takes_a_chunk_that_is_a_token_whole_before_any_merge():
    """ignore_merges: "abc" is a token, but no merge makes it from "ab" and "c"; byte-level BPE alone would stop."""
    tokens = list(BYTE_CHAR) + ["ab", "abc"]
    merges = ["a b"]
    llama3 = Tokenizer(tokens, merges, [1] * len(tokens), "llama-bpe")
    gpt2 = Tokenizer(tokens, merges, [1] * len(tokens), "gpt2")
    assert parts(llama3, llama3.encode("abc")) == ["abc"] and parts(gpt2, gpt2.encode("abc")) == ["ab", "c"]


def spm(pieces, scores, **kw):
    """A SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then pieces with their scores."""
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *pieces]
    types = [rt.UNKNOWN, CONTROL, CONTROL, *[rt.BYTE] * 256, *[1] * len(pieces)]
    return SentencePiece(tokens, [0.0] * 259 + list(scores), types, bos_id=1, eos_id=2, **kw)


def test_sentencepiece_merges_the_best_scored_pair_first_and_falls_back_to_bytes():
    tok = spm(["▁", "a", "b", "c", "▁a", "ab", "▁ab", "bc"], [-1, -2, -3, -4, -5, -6, -7, -0.5])
    assert parts(tok, tok.encode("abc")) == ["<s>", "▁a", "bc"]  # bc (-0.5) before ▁a (-5) before ab (-6)
    assert parts(tok, tok.encode("ab")) == ["<s>", "▁ab"]
    assert parts(tok, tok.encode("a é")) == ["<s>", "▁a", "▁", "<0xC3>", "<0xA9>"]  # é is no piece: its bytes
    assert tok.decode(tok.encode("a é")) == "<s> a é" and tok.piece(tok.ids["▁ab"]) == "␣ab"
    assert tok.piece(tok.ids["<0x0A>"]) == "<0a>"
    assert spm(["a"], [0], add_space_prefix=False, add_bos=False).encode("a") == [259]
    assert parts(tok, tok.encode("<s>a</s>", special=True)) == ["<s>", "<s>", "▁a", "</s>"]  # ▁ after a special


VOCABS = FIXTURES / "llama_vocab"
VOCAB_REFERENCE = json.loads((VOCABS / "tokens.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def llama_vocab(tmp_path_factory):
    """name -> the tokenizer of llama.cpp's vocabulary-only GGUF file (tests/fixtures/make_llama_vocab_reference.py)."""
    folder, out = tmp_path_factory.mktemp("vocab"), {}
    for name in VOCAB_REFERENCE["vocabs"]:
        path = folder / f"ggml-vocab-{name}.gguf"
        path.write_bytes(lzma.decompress((VOCABS / f"{path.name}.xz").read_bytes()))
        assert hashlib.sha256(path.read_bytes()).hexdigest() == VOCAB_REFERENCE["vocabs"][name]["file_sha256"]
        with GGUFFile(path) as f:
            out[name] = Tokenizer.from_metadata(f.metadata)
    return out


def test_llama_2_and_3_read_their_files(llama_vocab):
    llama2, llama3 = llama_vocab["llama-spm"], llama_vocab["llama-bpe"]
    assert isinstance(llama2, SentencePiece) and (len(llama2.tokens), llama2.bos_id, llama2.add_bos) == (32000, 1, True)
    assert type(llama3) is Tokenizer and (len(llama3.tokens), len(llama3.rank), llama3.pre) == (128256, 280147,
                                                                                                "llama-bpe")
    assert (llama3.bos_id, llama3.add_bos) == (128000, True)  # no add_bos_token in the file: llama.cpp's default


@pytest.mark.parametrize("name", ["llama-spm", "llama-bpe"])
def test_llama_cpps_own_test_texts_give_the_ids_in_its_out_file(llama_vocab, name):
    """llama.cpp's 47 texts per vocabulary (spaces alone, newlines, tabs, 🦙, Khmer, Cyrillic, digits, code) and the
    ids the original Hugging Face tokenizer gave, without BOS."""
    tok = llama_vocab[name]
    texts = (VOCABS / f"ggml-vocab-{name}.gguf.inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    want = (VOCABS / f"ggml-vocab-{name}.gguf.out").read_text(encoding="utf-8").split("\n")
    assert len(texts) == 47
    got = [tok.encode(text)[1:] for text in texts]  # BOS first: left out, as there
    assert got == [[int(i) for i in line.split()] for line in want[:len(texts)]]


@pytest.mark.parametrize("key", VOCAB_REFERENCE["vocabs"]["llama-spm"]["cases"])
def test_llama_2s_ids_equal_sentencepieces(llama_vocab, key):
    case = VOCAB_REFERENCE["vocabs"]["llama-spm"]["cases"][key]
    ids = llama_vocab["llama-spm"].encode(case["text"], special=case["special"])
    assert ids == case["sentencepiece"]
    if not case["special"]:
        assert llama_vocab["llama-spm"].decode(ids[1:]) == " " + case["text"]  # the space in front stays


@pytest.mark.parametrize("key", VOCAB_REFERENCE["vocabs"]["llama-bpe"]["cases"])
def test_llama_3s_ids_equal_transformers_after_the_bos(llama_vocab, key):
    case, tok = VOCAB_REFERENCE["vocabs"]["llama-bpe"]["cases"][key], llama_vocab["llama-bpe"]
    ids = tok.encode(case["text"], special=case["special"])
    assert ids[0] == tok.bos_id and ids[1:] == case["transformers_gguf"]
    assert tok.decode(ids[1:]) == case["text"]
