"""Lesson 12 on another Llama than SmolLM2: random weights under the real vocabularies of Llama 2 (SentencePiece,
BOS, a token per digit) and Llama 3 (byte-level BPE, BOS, digits by three), at 22 and 16 layers of 16 heads. Every
step must lay out at 80x24 in both languages (check-lessons), and the prose must say what holds for that model."""

import lzma
from pathlib import Path

import pytest
from helpers.cli import run_cli
from helpers.gguf_llama import write_llama_with_vocab

VOCABS = Path(__file__).parent / "fixtures" / "llama_vocab"
pytestmark = pytest.mark.slow  # about 30 s: two models written, lesson 12 checked at every setting on each
MODELS = {"llama-spm": 22, "llama-bpe": 16}  # vocabulary -> layers (TinyLlama's depth; Llama 3.2 1B's)


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    """vocabulary name -> a random Llama GGUF file that tokenizes with it."""
    folder, out = tmp_path_factory.mktemp("other"), {}
    for name, n_layer in MODELS.items():
        vocab = folder / f"ggml-vocab-{name}.gguf"
        vocab.write_bytes(lzma.decompress((VOCABS / f"{vocab.name}.xz").read_bytes()))
        out[name] = folder / f"random-{name}.gguf"
        write_llama_with_vocab(out[name], vocab, n_layer)
    return out


def env(path, tmp_path):
    return {"XF_TOUR_MODEL": str(path), "XF_TOUR_STATE_DIR": str(tmp_path), "XF_TOUR_WEIGHTS_CACHE": "off"}


@pytest.mark.parametrize("name", MODELS)
def test_every_step_of_lesson_12_lays_out_on_another_llama(other, tmp_path, name):
    out = run_cli("check-lessons", env=env(other[name], tmp_path))
    assert out.returncode == 0 and out.stdout.strip() == "13 lessons OK", out.stdout + out.stderr


@pytest.mark.parametrize("name, says_en, says_zh", [
    ("llama-spm", ["counting the BOS token (<s>)", "Every digit is cut out on its own", "random-llama-spm, a Llama",
                   "Of all the heads in all the layers, layer"],
     ["含开头加的 BOS 词元（<s>）", "每个数字单独成词元"]),
    ("llama-bpe", ["counting the BOS token (<|begin_of_text|>)", "Digits go in groups: 3 tokens for 1234567"],
     ["数字成组切：1234567 切成 3 个词元"]),
])
def test_the_prose_says_what_holds_for_that_model(other, tmp_path, name, says_en, says_zh):
    for lang, says in (("en", says_en), ("zh", says_zh)):
        out = run_cli("print", "--lesson", "real", "--lang", lang, env=env(other[name], tmp_path))
        text = " ".join(out.stdout.split())
        assert out.returncode == 0, out.stderr
        for words in says:
            assert " ".join(words.split()) in text, (lang, words)
        assert "no BOS" not in text and "开头不加 BOS" not in text and "SmolLM2" not in text
