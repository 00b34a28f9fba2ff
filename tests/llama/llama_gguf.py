"""Llama-family weights (Llama, Mistral, Qwen 2, Qwen 3) in Hugging Face layout -> a GGUF file in
llama.cpp's conventions.

Shared by make_model.py (random NumPy weights) and hf_to_gguf.py (a transformers model). The
conventions, as llama.cpp reads a file of architecture "llama":

* hyper-parameters under `llama.*` (block_count, embedding_length, ...);
* tensor names token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
  ffn_gate, ffn_up, ffn_down}, output_norm, output (absent when tied to token_embd), and the
  optional rope_freqs (one divisor per rotated pair);
* a weight of PyTorch shape [out, in] is stored row-major with ne = [in, out];
* the rows of attn_q and attn_k are reordered within each head so that ggml's rope, which rotates
  adjacent pairs (2i, 2i+1), computes what Hugging Face's rotate_half rope computes on the pairs
  (i, i + head_dim/2). See `gguf_row_order`. Qwen files ("qwen2", "qwen3": keys `qwen2.*`, ...)
  keep the rows as they are and are read with the rotate_half (NeoX) rope; Qwen 2 adds
  blk.N.attn_{q,k,v}.bias, Qwen 3 blk.N.attn_{q,k}_norm.weight (per-head RMS norms before rope).
"""

from __future__ import annotations

import json
import math
import string
from dataclasses import asdict, dataclass
from typing import Callable, Union

import numpy as np
from pathlib import Path

import gguf_writer as gw
from gguf_writer import GGMLType, ValueType


ARCHITECTURES = ("llama", "qwen2", "qwen3")


@dataclass
class HParams:
    n_layer: int = 2
    n_embd: int = 256
    n_ff: int = 512
    n_head: int = 8
    n_head_kv: int = 2
    n_vocab: int = 512
    n_ctx: int = 256
    rope_base: float = 10000.0
    rms_eps: float = 1e-5
    arch: str = "llama"        # qwen2: q/k/v biases; qwen3: q/k RMS norms; both: rotate_half rope rows as they are
    key_length: int = 0        # the head size when it is not n_embd / n_head (Qwen 3)
    sliding_window: int = 0    # each query sees its last `sliding_window` keys (0: all)

    @property
    def head_dim(self) -> int:
        return self.key_length or self.n_embd // self.n_head

    def check(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise ValueError(f"architecture {self.arch!r} is not one of {ARCHITECTURES}")
        if (not self.key_length and self.n_embd % self.n_head) or self.head_dim % 2:
            raise ValueError(f"width {self.n_embd} must split into {self.n_head} heads of even size")
        if self.n_head % self.n_head_kv:
            raise ValueError(f"{self.n_head} query heads are not a multiple of {self.n_head_kv} key/value heads")


# ---- the Q/K row order --------------------------------------------------------------------------


def add_shape_arguments(p) -> None:
    """The model-shape options the scripts share (argparse), defaults those of the CI models."""
    p.add_argument("--type", required=True, choices=WEIGHT_TYPES, help="weight type of the 2-D tensors")
    p.add_argument("--out", required=True, type=Path, help="output directory")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--ffn", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--tie", action="store_true", help="no output tensor: the logits use token_embd")
    p.add_argument("--rope-freqs", action="store_true", help="Llama-3-style rope_freqs factors")
    p.add_argument("--arch", default="llama", choices=ARCHITECTURES, help="general.architecture")
    p.add_argument("--head-dim", type=int, default=0, help="attention.key_length (default: hidden / heads)")
    p.add_argument("--sliding-window", type=int, default=0, help="attention.sliding_window (0: none)")


def hparams_from_arguments(a, n_vocab: int, **extra) -> HParams:
    """HParams from add_shape_arguments' options, checked."""
    hp = HParams(n_layer=a.layers, n_embd=a.hidden, n_ff=a.ffn, n_head=a.heads, n_head_kv=a.kv_heads,
                 n_vocab=n_vocab, n_ctx=a.context, arch=a.arch, key_length=a.head_dim,
                 sliding_window=a.sliding_window, **extra)
    hp.check()
    return hp


def gguf_row_order(head_dim: int) -> np.ndarray:
    """Within one head, stored row r is Hugging Face row gguf_row_order(head_dim)[r].

    Hugging Face's rope pairs dimension i with i + head_dim/2 (rotate_half); ggml's pairs 2i with
    2i + 1. Interleaving the two halves, stored row 2i = HF row i and stored row 2i + 1 = HF row
    i + head_dim/2, puts each HF pair next to itself with the same frequency index i:
    [0, h, 1, h+1, 2, h+2, ...] with h = head_dim/2.
    """
    half = head_dim // 2
    return np.stack([np.arange(half), np.arange(half) + half], axis=1).reshape(-1)


def to_gguf_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """HF q_proj/k_proj weight [n_heads·head_dim, in] -> the row order llama.cpp stores."""
    head_dim = w.shape[0] // n_heads
    order = (np.arange(n_heads)[:, None] * head_dim + gguf_row_order(head_dim)[None, :]).reshape(-1)
    return w[order]


def from_gguf_rows(w: np.ndarray, n_heads: int) -> np.ndarray:
    """The inverse of to_gguf_rows."""
    head_dim = w.shape[0] // n_heads
    order = (np.arange(n_heads)[:, None] * head_dim + gguf_row_order(head_dim)[None, :]).reshape(-1)
    out = np.empty_like(w)
    out[order] = w
    return out


# ---- tensor names and types ---------------------------------------------------------------------


def tensor_names(hp: HParams, tie: bool) -> list[tuple[str, str]]:
    """(GGUF name, Hugging Face name) of every weight, in the order llama.cpp's converter writes them."""
    names = [("token_embd.weight", "model.embed_tokens.weight")]
    for i in range(hp.n_layer):
        b, h = f"blk.{i}.", f"model.layers.{i}."
        names += [
            (b + "attn_norm.weight", h + "input_layernorm.weight"),
            (b + "attn_q.weight", h + "self_attn.q_proj.weight"),
            (b + "attn_k.weight", h + "self_attn.k_proj.weight"),
            (b + "attn_v.weight", h + "self_attn.v_proj.weight"),
        ]
        if hp.arch == "qwen2":
            names += [(b + f"attn_{x}.bias", h + f"self_attn.{x}_proj.bias") for x in "qkv"]
        if hp.arch == "qwen3":
            names += [(b + f"attn_{x}_norm.weight", h + f"self_attn.{x}_norm.weight") for x in "qk"]
        names += [
            (b + "attn_output.weight", h + "self_attn.o_proj.weight"),
            (b + "ffn_norm.weight", h + "post_attention_layernorm.weight"),
            (b + "ffn_gate.weight", h + "mlp.gate_proj.weight"),
            (b + "ffn_up.weight", h + "mlp.up_proj.weight"),
            (b + "ffn_down.weight", h + "mlp.down_proj.weight"),
        ]
    names.append(("output_norm.weight", "model.norm.weight"))
    if not tie:
        names.append(("output.weight", "lm_head.weight"))
    return names


def hf_shapes(hp: HParams) -> dict[str, tuple[int, ...]]:
    """PyTorch shapes of every Hugging Face weight (lm_head included)."""
    d, q, kv = hp.n_embd, hp.n_head * hp.head_dim, hp.n_head_kv * hp.head_dim
    shapes = {"model.embed_tokens.weight": (hp.n_vocab, d), "model.norm.weight": (d,),
              "lm_head.weight": (hp.n_vocab, d)}
    for i in range(hp.n_layer):
        h = f"model.layers.{i}."
        shapes.update({
            h + "input_layernorm.weight": (d,), h + "post_attention_layernorm.weight": (d,),
            h + "self_attn.q_proj.weight": (q, d), h + "self_attn.k_proj.weight": (kv, d),
            h + "self_attn.v_proj.weight": (kv, d), h + "self_attn.o_proj.weight": (d, q),
            h + "mlp.gate_proj.weight": (hp.n_ff, d), h + "mlp.up_proj.weight": (hp.n_ff, d),
            h + "mlp.down_proj.weight": (d, hp.n_ff),
        })
        if hp.arch == "qwen2":
            shapes.update({h + "self_attn.q_proj.bias": (q,), h + "self_attn.k_proj.bias": (kv,),
                           h + "self_attn.v_proj.bias": (kv,)})
        if hp.arch == "qwen3":
            shapes.update({h + "self_attn.q_norm.weight": (hp.head_dim,),
                           h + "self_attn.k_norm.weight": (hp.head_dim,)})
    return shapes


WEIGHT_TYPES = ("f32", "f16", "bf16", "q4_k", "q6_k", "q4_k_m", "q8_0", "q4_0", "q5_k", "q5_k_m")

# general.file_type as llama.cpp numbers its llama_ftype (informational for readers).
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "q4_k": 14, "q4_k_m": 15, "q5_k": 16, "q5_k_m": 17,
             "q6_k": 18, "bf16": 32}


def more_bits(layer: int, n_layer: int) -> bool:
    """The layers llama.cpp's Q4_K_M gives Q6_K attn_v / ffn_down: the first eighth, the last eighth,
    and every third layer in between (counting from the end of the first eighth, offsets 2, 5, 8...)."""
    first = n_layer // 8
    return layer < first or layer >= 7 * n_layer // 8 or (layer - first) % 3 == 2


def tensor_type(gguf_name: str, weight_type: str, n_layer: int, tie: bool) -> GGMLType:
    """The type a tensor is stored in: 1-D tensors (norms, biases, rope_freqs) stay f32; llama.cpp's mixes
    for q4_k_m and q5_k_m (Q6_K output, and Q6_K attn_v / ffn_down in the layers more_bits names), and
    for q4_0 (Q6_K output)."""
    if gguf_name.endswith(("_norm.weight", ".bias")) or gguf_name == "rope_freqs.weight":
        return GGMLType.F32
    output = gguf_name == "output.weight" or (tie and gguf_name == "token_embd.weight")
    if weight_type == "q4_0" and output:
        return GGMLType.Q6_K  # llama.cpp's Q4_0 files keep the output projection in Q6_K
    if weight_type not in ("q4_k_m", "q5_k_m"):
        return gw.TYPE_BY_NAME[weight_type]
    base = GGMLType.Q4_K if weight_type == "q4_k_m" else GGMLType.Q5_K
    if output:
        return GGMLType.Q6_K  # the output projection (token_embd when it doubles as it)
    if gguf_name.endswith((".attn_v.weight", ".ffn_down.weight")):
        layer = int(gguf_name.split(".")[1])
        return GGMLType.Q6_K if more_bits(layer, n_layer) else base
    return base


# ---- rope frequency factors ---------------------------------------------------------------------


def llama3_rope_factors(hp: HParams, factor: float = 8.0, low_freq_factor: float = 1.0,
                        high_freq_factor: float = 4.0, original_context: int = 2048) -> np.ndarray:
    """Llama-3-style divisors of each pair's frequency (rope_freqs): 1 for wavelengths shorter than
    original_context/high_freq_factor, `factor` for those longer than original_context/low_freq_factor,
    and a smooth blend of the two inverse frequencies in between. The defaults give all three kinds
    at head_dim 32, base 10000."""
    i = np.arange(hp.head_dim // 2, dtype=np.float64)
    inv_freq = hp.rope_base ** (-2.0 * i / hp.head_dim)
    wavelen = 2 * math.pi / inv_freq
    smooth = np.clip((original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor), 0.0, 1.0)
    scaled = (1 - smooth) * inv_freq / factor + smooth * inv_freq
    return (inv_freq / scaled).astype(np.float32)


# ---- vocabulary ---------------------------------------------------------------------------------

TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6
_WORDS = ("the of and to in is was for on that with as by at from it he she they we you this be are "
          "an or not but have had has his her their one all which were there when can more so if no "
          "out up into do time only new some could them these two may then first any like now my over "
          "such our man me even most made after also did many before must through back years where much "
          "your way well down should because each just those people how too little state good very make "
          "world still own see men work long get here between both life being under never day same "
          "another know while last might us great old year off come since against go came right used "
          "take three llama rayo model token").split()


def builtin_vocabulary(n_vocab: int) -> tuple[list[str], list[float], list[int]]:
    """A small SentencePiece-style vocabulary: <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>,
    then pieces ("▁" marks a leading space): ▁, letters, ▁letters, digits, punctuation, ▁words."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_CONTROL] + [TOKEN_BYTE] * 256
    pieces = ["▁"] + list(string.ascii_lowercase) + ["▁" + c for c in string.ascii_lowercase] \
        + list(string.ascii_uppercase) + ["▁" + c for c in string.ascii_uppercase] + list(string.digits) \
        + list(".,;:!?'\"-()") + ["▁" + w for w in _WORDS]
    seen = set(tokens)
    pieces = [p for p in dict.fromkeys(pieces) if p not in seen]
    if n_vocab < len(tokens) + 1:
        raise ValueError(f"the built-in vocabulary needs at least {len(tokens) + 1} entries, not {n_vocab}")
    n = 0
    while len(pieces) < n_vocab - len(tokens):
        pieces.append(f"▁w{n}")
        n += 1
    pieces = pieces[:n_vocab - len(tokens)]
    scores = [0.0] * len(tokens) + [-float(i) for i in range(len(pieces))]
    return tokens + pieces, scores, types + [TOKEN_NORMAL] * len(pieces)


def add_builtin_vocabulary(w: gw.GGUFWriter, n_vocab: int) -> None:
    tokens, scores, types = builtin_vocabulary(n_vocab)
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", ValueType.STRING, tokens)
    w.add_array("tokenizer.ggml.scores", ValueType.F32, scores)
    w.add_array("tokenizer.ggml.token_type", ValueType.I32, types)
    w.add_u32("tokenizer.ggml.unknown_token_id", 0)
    w.add_u32("tokenizer.ggml.bos_token_id", 1)
    w.add_u32("tokenizer.ggml.eos_token_id", 2)


def copied_vocabulary(path: str) -> list[gw.Metadatum]:
    """The tokenizer.* metadata of another GGUF file (e.g. llama.cpp's ggml-vocab-*.gguf)."""
    vocab = gw.GGUFReader(path).vocabulary()
    if not any(m.key == "tokenizer.ggml.tokens" for m in vocab):
        raise ValueError(f"{path} has no tokenizer.ggml.tokens")
    return vocab


def vocabulary_size(vocab: list[gw.Metadatum]) -> int:
    return len(next(m.value for m in vocab if m.key == "tokenizer.ggml.tokens"))


# ---- the file ---------------------------------------------------------------------------------------

Weight = Union[np.ndarray, Callable[[], np.ndarray]]


def write_llama_gguf(path, hp: HParams, weights: dict[str, Weight], weight_type: str, *, tie: bool = False,
                     rope_factors: np.ndarray | None = None, vocabulary: list[gw.Metadatum] | str | None = "builtin",
                     name: str = "rayo-llama test model", keep_reference: bool = True,
                     same_as: Callable[[str], str] | None = None) -> dict[str, np.ndarray]:
    """Writes `weights` (Hugging Face names and layout, float arrays or functions giving them) as a
    llama GGUF file. Returns, when keep_reference, every weight as the file stores it after
    decoding, in Hugging Face layout (lm_head = embed_tokens when tied) -- float32 arrays.
    `same_as` maps a weight's name to a key; weights of one key and one type are encoded once and
    their bytes repeated (for large benchmark models whose layers share their values)."""
    hp.check()
    if weight_type not in WEIGHT_TYPES:
        raise ValueError(f"weight type {weight_type!r} is not one of {WEIGHT_TYPES}")
    w = gw.GGUFWriter()
    a = hp.arch + "."
    w.add_string("general.architecture", hp.arch)
    w.add_string("general.name", name)
    w.add_u32("general.file_type", FILE_TYPE[weight_type])
    if weight_type.startswith("q"):
        w.add_u32("general.quantization_version", 2)
    w.add_u32(a + "block_count", hp.n_layer)
    w.add_u32(a + "context_length", hp.n_ctx)
    w.add_u32(a + "embedding_length", hp.n_embd)
    w.add_u32(a + "feed_forward_length", hp.n_ff)
    w.add_u32(a + "attention.head_count", hp.n_head)
    w.add_u32(a + "attention.head_count_kv", hp.n_head_kv)
    if hp.key_length:
        w.add_u32(a + "attention.key_length", hp.key_length)
        w.add_u32(a + "attention.value_length", hp.key_length)
    if hp.sliding_window:
        w.add_u32(a + "attention.sliding_window", hp.sliding_window)
    w.add_u32(a + "rope.dimension_count", hp.head_dim)
    w.add_f32(a + "rope.freq_base", hp.rope_base)
    w.add_f32(a + "attention.layer_norm_rms_epsilon", hp.rms_eps)
    w.add_u32(a + "vocab_size", hp.n_vocab)
    if vocabulary == "builtin":
        add_builtin_vocabulary(w, hp.n_vocab)
    elif vocabulary:
        if vocabulary_size(vocabulary) != hp.n_vocab:
            raise ValueError(f"the vocabulary has {vocabulary_size(vocabulary)} tokens, the model {hp.n_vocab}")
        for m in vocabulary:
            w.add(m.key, m.value_type, m.value, m.element_type)

    shapes = hf_shapes(hp)
    reference: dict[str, np.ndarray] = {}
    encoded: dict[tuple[str, GGMLType], bytes] = {}

    def producer(gguf_name: str, hf_name: str, ggml_type: GGMLType):
        def make() -> bytes:
            if same_as is not None:
                key = (same_as(hf_name), ggml_type)
                if key not in encoded:
                    encoded[key] = encode()
                return encoded[key]
            return encode()

        def encode() -> bytes:
            x = weights[hf_name]
            x = np.asarray(x() if callable(x) else x, dtype=np.float32)
            if x.shape != shapes[hf_name]:
                raise ValueError(f"{hf_name}: shape {x.shape}, expected {shapes[hf_name]}")
            # llama.cpp's converter reorders Llama's q/k rows for its adjacent-pair rope; Qwen's stay.
            permuted = hp.arch == "llama" and hf_name.endswith(".weight")
            heads = 0
            if permuted:
                heads = hp.n_head if ".q_proj." in hf_name else hp.n_head_kv if ".k_proj." in hf_name else 0
            stored = to_gguf_rows(x, heads) if heads else x
            data = gw.encode(stored, ggml_type)
            if keep_reference:
                back = gw.decode(data, ggml_type, list(reversed(stored.shape)))
                reference[hf_name] = from_gguf_rows(back, heads) if heads else back
            return data
        return make

    if rope_factors is not None:
        factors = np.asarray(rope_factors, dtype=np.float32)
        if factors.shape != (hp.head_dim // 2,):
            raise ValueError(f"rope_freqs needs {hp.head_dim // 2} factors, got {factors.shape}")
        w.add_tensor("rope_freqs.weight", GGMLType.F32, [factors.size], gw.encode(factors, GGMLType.F32))
        reference["rope_freqs"] = factors
    for gguf_name, hf_name in tensor_names(hp, tie):
        t = tensor_type(gguf_name, weight_type, hp.n_layer, tie)
        w.add_tensor(gguf_name, t, list(reversed(shapes[hf_name])), producer(gguf_name, hf_name, t))
    w.write(path)
    if keep_reference and tie:
        reference["lm_head.weight"] = reference["model.embed_tokens.weight"]
    return reference


def save_reference(path, hp: HParams, reference: dict[str, np.ndarray], **extra) -> None:
    """reference.npz: the decoded weights under their Hugging Face names, and the hyper-parameters
    as JSON under "config"."""
    config = dict(asdict(hp), head_dim=hp.head_dim, **extra)
    np.savez(path, config=np.array(json.dumps(config)), **reference)
