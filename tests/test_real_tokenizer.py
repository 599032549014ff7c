"""The real model's tokenizer (engine/real_tokenizer.py): GPT-2's pattern and byte-level BPE on tiny vocabularies
worked by hand, then SmolLM2-135M-Instruct's against ids computed by Hugging Face's `tokenizers`
(tests/fixtures/make_smollm2_reference.py), and every token of it drawn safely in a table."""

import json
import unicodedata
from pathlib import Path

import pytest
from rich.cells import cell_len

from bench.smollm import smollm_path
from engine import bpe
from engine.errors import EngineError
from engine.gguf_file import GGUFFile
from engine.real_tokenizer import BYTE_CHAR, CONTROL, USER_DEFINED, Tokenizer, byte_alphabet, pre_tokenize
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
    assert pre_tokenize("In 2024, 3.14", digits_first=False) == ["In", " 2024", ",", " 3", ".", "14"]
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


def test_an_unknown_pre_tokenizer_or_a_merge_without_its_token_is_refused_in_both_languages():
    with pytest.raises(EngineError) as e:
        tiny(pre="llama-bpe")
    assert "llama-bpe" in e.value.en and "llama-bpe" in e.value.zh and "smollm" in e.value.en
    with pytest.raises(EngineError, match="'a b'"):
        Tokenizer(list(BYTE_CHAR), ["a b"], [1] * 256)
    with pytest.raises(EngineError, match="'llama'"):
        Tokenizer.from_metadata({"tokenizer.ggml.model": "llama"})


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
