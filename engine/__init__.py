"""The numbers of the tour: a Llama-style transformer in plain numpy.

Glossary, used in every shape comment ([n_seq, d_model] and so on):
    n_seq      tokens in the sequence          d_model    width of the residual stream x
    n_head     query heads                     n_kv_head  key/value heads (GQA when < n_head)
    head_dim   width of one head               n_layer    transformer blocks
    n_vocab    vocabulary size                 d_ff       hidden width of the SwiGLU FFN
    d          width of q and k in a demo; the d of the division by sqrt(d)

Nothing here imports textual or rich, and nothing prints: functions return what the screen shows.
"""

from .demos import (DEMO_SEED, attention_demo, cat_demo, d_sweep, multi_head_demo, permutation_demo, swiglu_demo,
                    rope_demo)
from .errors import MAX_BYTES, EngineError, ParamError, SizeError, check_bytes
from .llama import TinyConfig, forward
from .ops import (attention, causal_mask, entropy, merge_heads, rms_norm, silu, softmax, split_heads,
                  swiglu)
from .positions import apply_rope, frequencies, sinusoidal_positions, wavelengths
from .sizing import (PRESETS, PUBLISHED, ModelConfig, group_shares, kv_bytes_per_token, kv_cache_bytes,
                     param_count, preset, swiglu_hidden, swiglu_widths, total_params, weight_bytes)
from .views import VIEWS, Result, Tr, get_view, run_view

__all__ = [
    "DEMO_SEED", "MAX_BYTES", "PRESETS", "PUBLISHED", "VIEWS",
    "EngineError", "ModelConfig", "ParamError", "Result", "SizeError", "TinyConfig", "Tr",
    "apply_rope", "attention", "attention_demo", "cat_demo", "causal_mask", "check_bytes", "d_sweep",
    "entropy", "forward", "frequencies", "get_view", "group_shares", "kv_bytes_per_token", "kv_cache_bytes",
    "merge_heads", "multi_head_demo", "param_count", "permutation_demo", "preset", "rms_norm", "rope_demo",
    "run_view", "silu", "sinusoidal_positions", "softmax", "split_heads", "swiglu", "swiglu_demo",
    "swiglu_hidden", "swiglu_widths",
    "total_params", "wavelengths", "weight_bytes",
]
