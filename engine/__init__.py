"""The engine of the tour: every number a lesson shows, computed live in plain numpy.

It holds a Llama-style transformer, operation by operation (ops, positions, the forward pass in llama,
RMSNorm in norms); the two small models the lessons run: a random-weight one (random_llama) and a trained
tiny Llama (tiny, with its optimizer, its training pass and its second core, its grammar in corpus, and a
byte-level BPE in bpe); a real Llama read from a GGUF file (real_llama, on the reader gguf_file) with its
tokenizer, GPT-2's byte-level BPE from the file's metadata (real_tokenizer); the arithmetic of real models'
sizes (sizing); the seeded experiments (demos, seeds); sampling; and `views`: what each lesson step shows,
as plain tables. Under them: errors (refusals worded in both languages), records (the result types) and
files (the one atomic file write, for every layer). Each module's docstring says what it holds.

Glossary, used in every shape comment ([n_seq, d_model] and so on):
    n_seq      tokens in the sequence          d_model    width of the residual stream x
    n_head     query heads                     n_kv_head  key/value heads (GQA when < n_head)
    head_dim   width of one head               n_layer    transformer blocks
    n_vocab    vocabulary size                 d_ff       hidden width of the SwiGLU FFN
    d          width of q and k in a demo; the d of the division by sqrt(d)

Nothing here imports textual or rich, and nothing prints: functions return what the screen shows.
Importing `engine` imports nothing else: each name in _HOMES below loads its module on first use, and
`engine.MODULE` imports that submodule.
"""

import importlib

_HOMES = {
    "seeds": ("DEMO_SEED",),
    "demos": ("attention_demo", "cat_demo", "d_sweep", "multi_head_demo", "permutation_demo",
              "rope_demo", "swiglu_demo"),
    "errors": ("MAX_BYTES", "EngineError", "FileError", "ParamError", "SizeError", "check_bytes"),
    "ops": ("attention", "causal_mask", "entropy", "log_softmax", "merge_heads", "rms_norm", "silu", "softmax",
            "split_heads", "swiglu"),
    "positions": ("apply_rope", "frequencies", "sinusoidal_positions", "wavelengths"),
    "sizing": ("PRESETS", "PUBLISHED", "ModelConfig", "group_shares", "kv_bytes_per_token", "kv_cache_bytes",
               "param_count", "preset", "swiglu_hidden", "swiglu_widths", "total_params", "weight_bytes"),
    "views": ("VIEWS", "Result", "Tr", "get_view", "run_view"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name):
    """`engine.softmax` and the like: import the module that defines the name, on first use."""
    if name not in _HOME:
        try:
            return importlib.import_module(f".{name}", __name__)  # a submodule: engine.tiny, engine.corpus...
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value
