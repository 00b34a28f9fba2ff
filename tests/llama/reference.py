#!/usr/bin/env python3
"""The Hugging Face Llama forward pass in float64 NumPy, from a reference.npz of make_model.py or
hf_to_gguf.py (weights under their Hugging Face names, hyper-parameters as JSON under "config").

    reference.py DIR/reference.npz --prompt-tokens 1,2,3 --n-predict 8 [--out DIR] [--npy FILE]

Written from transformers' modeling_llama: embed; per layer x += o_proj(attention(rope(q), rope(k), v))
on RMSNorm(x), then x += down(silu(gate(h))·up(h)) on h = RMSNorm(x); final RMSNorm; lm_head.
Qwen 2's q/k/v biases, Qwen 3's per-head q/k RMS norms (before rope) and Mistral's sliding window
(query i sees keys i − window < j ≤ i) apply where the npz has them.
Rope rotates each head's pairs (i, i + head_dim/2) (rotate_half) at positions 0..n−1; grouped-query
heads share key/value head h // (n_head / n_head_kv); attention is causal with scale 1/√head_dim.

Files written to --out (default: the npz's directory), for a C++ test to read:
  logits.txt         prompt logits, position-major: n_prompt × n_vocab lines, one float each
  greedy.txt         the --n-predict greedy tokens, one id per line
  decode_logits.txt  the logits that chose each greedy token: n_predict × n_vocab lines
  greedy_margins.txt per greedy step, top-1 minus top-2 logit (a small margin may flip in float32)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


class Llama:
    def __init__(self, npz_path):
        data = np.load(npz_path)
        self.cfg = json.loads(str(data["config"]))
        self.w = {k: data[k].astype(np.float64) for k in data.files if k != "config"}
        c = self.cfg
        self.n_layer, self.n_head, self.n_head_kv = c["n_layer"], c["n_head"], c["n_head_kv"]
        self.head_dim, self.eps, self.n_vocab = c["head_dim"], c["rms_eps"], c["n_vocab"]
        self.window = c.get("sliding_window", 0)
        i = np.arange(0, self.head_dim, 2, dtype=np.float64)
        self.inv_freq = 1.0 / (c["rope_base"] ** (i / self.head_dim))
        if "rope_freqs" in self.w:
            self.inv_freq = self.inv_freq / self.w["rope_freqs"]

    def rms_norm(self, x, weight):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + self.eps) * weight

    def rope(self, x, positions):
        """x [heads, T, head_dim]: q·cos + rotate_half(q)·sin with rotate_half(x) = [−x2, x1]."""
        freqs = np.outer(positions, self.inv_freq)               # [T, head_dim/2]
        emb = np.concatenate([freqs, freqs], axis=-1)             # [T, head_dim]
        half = self.head_dim // 2
        rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
        return x * np.cos(emb) + rotated * np.sin(emb)

    def projection(self, x, name):
        """x·Wᵀ (+ the bias, where the model has one: Qwen 2)."""
        y = x @ self.w[name + ".weight"].T
        return y + self.w[name + ".bias"] if name + ".bias" in self.w else y

    def attention(self, x, p, positions):
        T = x.shape[0]
        q = self.projection(x, p + "self_attn.q_proj").reshape(T, self.n_head, self.head_dim).transpose(1, 0, 2)
        k = self.projection(x, p + "self_attn.k_proj").reshape(T, self.n_head_kv, self.head_dim).transpose(1, 0, 2)
        v = self.projection(x, p + "self_attn.v_proj").reshape(T, self.n_head_kv, self.head_dim).transpose(1, 0, 2)
        if p + "self_attn.q_norm.weight" in self.w:  # Qwen 3: each head RMS-normed before rope
            q = self.rms_norm(q, self.w[p + "self_attn.q_norm.weight"])
            k = self.rms_norm(k, self.w[p + "self_attn.k_norm.weight"])
        q, k = self.rope(q, positions), self.rope(k, positions)
        n_rep = self.n_head // self.n_head_kv
        k, v = np.repeat(k, n_rep, axis=0), np.repeat(v, n_rep, axis=0)  # query head h reads kv head h // n_rep
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(self.head_dim)
        seen = np.tril(np.ones((T, T), dtype=bool))
        if self.window:  # query i sees keys j with i - window < j <= i
            seen &= np.triu(np.ones((T, T), dtype=bool), -(self.window - 1))
        scores = np.where(seen, scores, -np.inf)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        out = (probs @ v).transpose(1, 0, 2).reshape(T, self.n_head * self.head_dim)
        return out @ self.w[p + "self_attn.o_proj.weight"].T

    def mlp(self, x, p):
        gate = x @ self.w[p + "mlp.gate_proj.weight"].T
        up = x @ self.w[p + "mlp.up_proj.weight"].T
        return (gate / (1 + np.exp(-gate)) * up) @ self.w[p + "mlp.down_proj.weight"].T

    def logits(self, tokens) -> np.ndarray:
        """[len(tokens), n_vocab] float64 logits of every position."""
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.size == 0 or tokens.min() < 0 or tokens.max() >= self.n_vocab:
            raise ValueError(f"token ids must be in 0..{self.n_vocab - 1}")
        positions = np.arange(tokens.size, dtype=np.float64)
        x = self.w["model.embed_tokens.weight"][tokens]
        for i in range(self.n_layer):
            p = f"model.layers.{i}."
            x = x + self.attention(self.rms_norm(x, self.w[p + "input_layernorm.weight"]), p, positions)
            x = x + self.mlp(self.rms_norm(x, self.w[p + "post_attention_layernorm.weight"]), p)
        return self.rms_norm(x, self.w["model.norm.weight"]) @ self.w["lm_head.weight"].T

    def greedy(self, prompt, n_predict):
        """(generated ids, the logits row that chose each, top-1 minus top-2 margins)."""
        tokens, rows = list(prompt), []
        for _ in range(n_predict):
            rows.append(self.logits(tokens)[-1])
            tokens.append(int(np.argmax(rows[-1])))
        rows = np.array(rows).reshape(n_predict, self.n_vocab)
        top2 = np.sort(rows, axis=1)[:, -2:] if n_predict else np.zeros((0, 2))
        return tokens[len(prompt):], rows, top2[:, 1] - top2[:, 0]


def parse_tokens(text: str) -> list[int]:
    return [int(t) for t in text.replace(",", " ").split()]


def write_column(path: Path, values) -> None:
    path.write_text("".join(f"{v:.9g}\n" for v in np.asarray(values).reshape(-1)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("npz", type=Path)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--prompt-tokens", help="comma-separated token ids")
    g.add_argument("--prompt-file", type=Path, help="a file of token ids (commas or whitespace)")
    p.add_argument("--n-predict", type=int, default=0)
    p.add_argument("--out", type=Path, help="directory for the .txt files (default: the npz's)")
    p.add_argument("--npy", type=Path, help="also save all prompt positions' logits as .npy")
    p.add_argument("--print-logits", action="store_true", help="print the whole last prompt row")
    a = p.parse_args(argv)

    model = Llama(a.npz)
    prompt = parse_tokens(a.prompt_tokens if a.prompt_tokens is not None else a.prompt_file.read_text())
    if len(prompt) + a.n_predict > model.cfg["n_ctx"]:
        print(f"prompt {len(prompt)} + {a.n_predict} tokens exceed the context {model.cfg['n_ctx']}", file=sys.stderr)
        return 2
    try:
        logits = model.logits(prompt)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    generated, decode_rows, margins = model.greedy(prompt, a.n_predict)

    out = a.out or a.npz.parent
    out.mkdir(parents=True, exist_ok=True)
    write_column(out / "logits.txt", logits)
    write_column(out / "decode_logits.txt", decode_rows)
    write_column(out / "greedy_margins.txt", margins)
    (out / "greedy.txt").write_text("".join(f"{t}\n" for t in generated))
    if a.npy:
        np.save(a.npy, logits)

    last = logits[-1]
    top = np.argsort(-last)[:8]
    print(f"prompt {prompt}: logits of position {len(prompt) - 1}, top 8: " +
          ", ".join(f"{t}:{last[t]:.6f}" for t in top))
    if a.print_logits:
        print(" ".join(f"{v:.9g}" for v in last))
    print("greedy:", ",".join(str(t) for t in generated))
    if a.n_predict:
        print(f"smallest greedy margin {margins.min():.6f}")
    print(f"wrote {out}/logits.txt, decode_logits.txt, greedy.txt, greedy_margins.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
