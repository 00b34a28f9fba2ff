#!/usr/bin/env python3
"""Makes a small random Llama model: DIR/model.gguf in llama.cpp's conventions and
DIR/reference.npz with the weights as the file stores them (decoded, Hugging Face layout).

    make_model.py --type q4_k_m --out build/llama-q4km [--tie] [--rope-freqs] [--seed 1]

Weights are seeded per tensor name, so a model differs between types only by its rounding.
With --shared-layers every layer holds layer 0's values (the file keeps its full size): an
8B-shaped benchmark model is then written in under a minute.
"""

from __future__ import annotations

import argparse
import re
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llama_gguf as lg  # noqa: E402


def random_weight(seed: int, hf_name: str, shape: tuple[int, ...]):
    """A function giving the weight: norms 1 + 0.1·N(0,1); biases 0.5·N(0,1); projections N(0, 1/in) so that
    activations keep unit scale; lm_head 3× that, for well-separated logits; embeddings 0.1·N(0,1),
    small beside the layers' outputs so that a tied lm_head does not just repeat the last token."""
    def make() -> np.ndarray:
        rng = np.random.default_rng([seed, zlib.crc32(hf_name.encode())])
        x = rng.standard_normal(shape, dtype=np.float32)
        if hf_name.endswith(".bias"):
            return np.float32(0.5) * x
        if len(shape) == 1:
            return 1 + np.float32(0.1) * x
        if hf_name == "model.embed_tokens.weight":
            return np.float32(0.1) * x
        gain = 3.0 if hf_name == "lm_head.weight" else 1.0
        return x * np.float32(gain / np.sqrt(shape[1]))
    return make


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lg.add_shape_arguments(p)
    p.add_argument("--rope-base", type=float, default=10000.0)
    p.add_argument("--rms-eps", type=float, default=1e-5)
    p.add_argument("--vocab-from", metavar="GGUF", help="copy tokenizer.* from this file (sets the vocabulary size)")
    p.add_argument("--no-vocab", action="store_true", help="write no tokenizer metadata")
    p.add_argument("--no-reference", action="store_true", help="skip reference.npz (for large models)")
    p.add_argument("--shared-layers", action="store_true",
                   help="every layer holds layer 0's values (implies --no-reference)")
    a = p.parse_args(argv)
    a.no_reference = a.no_reference or a.shared_layers

    vocabulary = None if a.no_vocab else lg.copied_vocabulary(a.vocab_from) if a.vocab_from else "builtin"
    n_vocab = lg.vocabulary_size(vocabulary) if isinstance(vocabulary, list) else a.vocab
    hp = lg.hparams_from_arguments(a, n_vocab, rope_base=a.rope_base, rms_eps=a.rms_eps)
    shapes = lg.hf_shapes(hp)
    same_as = (lambda name: re.sub(r"^model\.layers\.\d+\.", "model.layers.0.", name)) if a.shared_layers else None
    weights = {name: random_weight(a.seed, same_as(name) if same_as else name, shape) for name, shape in shapes.items()}
    factors = lg.llama3_rope_factors(hp) if a.rope_freqs else None

    a.out.mkdir(parents=True, exist_ok=True)
    reference = lg.write_llama_gguf(a.out / "model.gguf", hp, weights, a.type, tie=a.tie, rope_factors=factors,
                                    vocabulary=vocabulary, name=f"rayo-llama random {a.type}",
                                    keep_reference=not a.no_reference, same_as=same_as)
    if not a.no_reference:
        lg.save_reference(a.out / "reference.npz", hp, reference, weight_type=a.type, tie=a.tie, seed=a.seed)
    print(f"wrote {a.out / 'model.gguf'}" + ("" if a.no_reference else f" and {a.out / 'reference.npz'}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
