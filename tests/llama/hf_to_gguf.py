#!/usr/bin/env python3
"""A randomly initialised transformers LlamaForCausalLM (Qwen2, Qwen3, Mistral with --arch and
--sliding-window) -> GGUF (the same writer and conventions
as make_model.py) plus transformers' own logits for a prompt, for comparing rayo-llama with
Hugging Face on a machine that has torch and transformers:

    hf_to_gguf.py --type q4_k_m --out /tmp/hf --prompt-tokens 1,300,301,302 --n-predict 16

The model is built in float32 from a LlamaConfig with the given seed; the weights are written to
DIR/model.gguf, then the DECODED weights (what the file stores) are loaded back into the model, so
the logits below are transformers' for exactly the file's values, at any weight type. The forward
pass runs in float64 on the CPU. Writes DIR/reference.npz, and DIR/logits.txt, greedy.txt,
decode_logits.txt, greedy_margins.txt in reference.py's formats; also prints how far reference.py's
NumPy forward pass is from transformers' on the same weights.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llama_gguf as lg  # noqa: E402
import reference  # noqa: E402


def build_model(hp: lg.HParams, a):
    """transformers' model of hp.arch: LlamaForCausalLM, MistralForCausalLM for a sliding window,
    Qwen2ForCausalLM or Qwen3ForCausalLM; their biases and q/k norms made random (transformers
    starts them at 0 and 1, which would test nothing)."""
    common = dict(vocab_size=hp.n_vocab, hidden_size=hp.n_embd, intermediate_size=hp.n_ff,
                  num_hidden_layers=hp.n_layer, num_attention_heads=hp.n_head, num_key_value_heads=hp.n_head_kv,
                  max_position_embeddings=hp.n_ctx, rms_norm_eps=hp.rms_eps, tie_word_embeddings=a.tie,
                  initializer_range=a.init_std)
    if hp.arch == "qwen2":
        config, cls = transformers.Qwen2Config(**common, use_sliding_window=False), transformers.Qwen2ForCausalLM
    elif hp.arch == "qwen3":
        config = transformers.Qwen3Config(**common, head_dim=hp.head_dim, attention_bias=False,
                                          use_sliding_window=False)
        cls = transformers.Qwen3ForCausalLM
    elif hp.sliding_window:
        config = transformers.MistralConfig(**common, sliding_window=hp.sliding_window)
        cls = transformers.MistralForCausalLM
    else:
        config = transformers.LlamaConfig(**common, attention_bias=False, mlp_bias=False)
        cls = transformers.LlamaForCausalLM
    config._attn_implementation = "eager"
    rope = {"rope_type": "default"}
    if a.rope_freqs:  # the scaling lg.llama3_rope_factors describes, as transformers configures it
        rope = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 2048}
    if hasattr(config, "rope_parameters"):  # transformers >= 5
        config.rope_parameters = dict(rope, rope_theta=hp.rope_base)
    else:
        config.rope_theta = hp.rope_base
        config.rope_scaling = dict(rope, type=rope["rope_type"]) if a.rope_freqs else None
    torch.manual_seed(a.seed)
    model = cls(config).float().eval()
    with torch.no_grad():
        for name, t in model.named_parameters():
            if name.endswith(".bias"):
                t.normal_(0.0, 0.5)
            elif name.endswith(("q_norm.weight", "k_norm.weight")):
                t.copy_(1 + 0.1 * torch.randn_like(t))
    return model


def rope_divisors(model, hp: lg.HParams) -> np.ndarray:
    """Each pair's frequency divisor: the unscaled inverse frequency over the model's."""
    i = np.arange(0, hp.head_dim, 2, dtype=np.float64)
    plain = hp.rope_base ** (-i / hp.head_dim)
    return plain / model.model.rotary_emb.inv_freq.double().cpu().numpy()


def hf_greedy(model, prompt, n_predict):
    tokens, rows = list(prompt), []
    with torch.no_grad():
        prompt_logits = model(torch.tensor([prompt])).logits[0].numpy()
        for _ in range(n_predict):
            rows.append(model(torch.tensor([tokens])).logits[0, -1].numpy())
            tokens.append(int(np.argmax(rows[-1])))
    rows = np.array(rows).reshape(n_predict, -1)
    top2 = np.sort(rows, axis=1)[:, -2:]
    return prompt_logits, tokens[len(prompt):], rows, top2[:, 1] - top2[:, 0]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lg.add_shape_arguments(p)
    p.add_argument("--init-std", type=float, default=0.02, help="LlamaConfig.initializer_range")
    p.add_argument("--prompt-tokens", default="1,300,301,302,42,7")
    p.add_argument("--n-predict", type=int, default=16)
    a = p.parse_args(argv)

    hp = lg.hparams_from_arguments(a, a.vocab)
    model = build_model(hp, a)
    divisors = rope_divisors(model, hp)
    if not a.rope_freqs and not np.allclose(divisors, 1, rtol=1e-6):
        raise SystemExit(f"the model's rope frequencies are not base {hp.rope_base}'s: divisors {divisors}")
    if a.rope_freqs:
        ours = lg.llama3_rope_factors(hp)
        print(f"rope divisors: transformers' vs llama_gguf.llama3_rope_factors differ by at most "
              f"{np.abs(divisors - ours).max() / ours.max():.1e} (relative); the file gets transformers'")
    weights = {k: v.detach().cpu().float().numpy() for k, v in model.state_dict().items()}

    a.out.mkdir(parents=True, exist_ok=True)
    stored = lg.write_llama_gguf(a.out / "model.gguf", hp, weights, a.type, tie=a.tie,
                                 rope_factors=divisors if a.rope_freqs else None,
                                 name=f"transformers {type(model).__name__} seed {a.seed} {a.type}")
    lg.save_reference(a.out / "reference.npz", hp, stored, weight_type=a.type, tie=a.tie, seed=a.seed,
                      source="transformers")

    # Transformers computes with exactly the file's values, in float64.
    decoded = {k: torch.from_numpy(np.ascontiguousarray(stored[k])) for k in weights if k in stored}
    missing = [k for k in weights if k.endswith(".weight") and k not in stored]
    if missing:
        raise SystemExit(f"weights not written: {missing}")
    model.load_state_dict(decoded, strict=False)
    model = model.double()
    prompt = reference.parse_tokens(a.prompt_tokens)
    logits, generated, rows, margins = hf_greedy(model, prompt, a.n_predict)

    reference.write_column(a.out / "logits.txt", logits)
    reference.write_column(a.out / "decode_logits.txt", rows)
    reference.write_column(a.out / "greedy_margins.txt", margins)
    (a.out / "greedy.txt").write_text("".join(f"{t}\n" for t in generated))

    numpy_logits = reference.Llama(a.out / "reference.npz").logits(prompt)
    gap = np.abs(numpy_logits - logits).max() / np.abs(logits).max()
    print(f"transformers {__import__('transformers').__version__}, torch {torch.__version__}; wrote {a.out}")
    print(f"greedy: {','.join(map(str, generated))} (smallest margin {margins.min():.6f})")
    print(f"reference.py vs transformers, prompt logits: max |difference| / max |logit| = {gap:.2e}")
    return 0 if gap < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
