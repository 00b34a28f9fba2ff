#!/usr/bin/env python3
"""rayo-llama against the float64 reference: makes a tiny model of one weight type, runs
reference.py and rayo-llama on one device, and compares every prompt position's logits and the
greedy tokens.

    check_rayo_llama.py RAYO_LLAMA --type q4_k --device cpu --work DIR [--tie] [--rope-freqs] [--hf]
                        [--arch llama|qwen2|qwen3] [--head-dim N] [--sliding-window N]

--hf takes the model and its logits from transformers' LlamaForCausalLM (Qwen2ForCausalLM,
Qwen3ForCausalLM; MistralForCausalLM with a sliding window) at random initialisation
(hf_to_gguf.py, on a machine with torch and transformers) instead of make_model.py and reference.py.

Logits must lie within `tolerance · max|logit|` of the reference (per weight type, below); the
greedy tokens must agree, except after a step whose reference margin between its two best tokens
is below twice the tolerance (there a correct implementation may pick either, and the sequences
part). Exit code 0 when both hold, 1 otherwise, 77 when the device is not present.
"""

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PROMPT = "1,300,301,302,42,7,260,261"

# Relative to the largest |logit| of the prompt. The reference uses the file's weights as stored
# (decoded), so what is left is rayo's arithmetic: f32 sums, 16-bit activations beside 16-bit
# weights on the GPUs, q8_k-quantized activations beside K-quant weights.
# The CPU and lavapipe stay within 2e-6 (f32, f16, bf16) and 2e-4 (K-quants).
TOLERANCE = {"f32": 1e-5, "f16": 1e-2, "bf16": 1e-2, "q4_k": 1e-2, "q6_k": 1e-2, "q4_k_m": 1e-2, "q8_0": 1e-2,
             "q4_0": 1e-2, "q5_k": 1e-2, "q5_k_m": 1e-2}
SKIP = 77  # ctest's SKIP_RETURN_CODE: the device is not present


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode == 2 and "unknown device" in done.stderr:
        print(done.stderr.strip())
        sys.exit(SKIP)
    if done.returncode != 0:
        sys.stderr.write(f"{' '.join(map(str, cmd))} exited with {done.returncode}\n{done.stdout}{done.stderr}")
        sys.exit(1)
    return done.stdout


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rayo_llama", type=Path)
    p.add_argument("--type", required=True, choices=sorted(TOLERANCE))
    p.add_argument("--device", default="cpu")
    p.add_argument("--work", required=True, type=Path)
    p.add_argument("--n-predict", type=int, default=8)
    p.add_argument("--tie", action="store_true")
    p.add_argument("--rope-freqs", action="store_true")
    p.add_argument("--capture", action="store_true", help="decode with rayo-llama --capture (rayo::capture on a GPU)")
    p.add_argument("--arch", default="llama", help="llama, qwen2 or qwen3")
    p.add_argument("--head-dim", type=int, default=0, help="a head size other than hidden / heads (Qwen 3's)")
    p.add_argument("--sliding-window", type=int, default=0)
    p.add_argument("--hf", action="store_true",
                   help="the model and its logits from transformers' LlamaForCausalLM (hf_to_gguf.py; needs torch)")
    a = p.parse_args()

    work = a.work
    work.mkdir(parents=True, exist_ok=True)
    extra = (["--tie"] if a.tie else []) + (["--rope-freqs"] if a.rope_freqs else []) + [
        "--arch", a.arch, "--head-dim", str(a.head_dim), "--sliding-window", str(a.sliding_window)]
    if a.hf:
        print(run([sys.executable, HERE / "hf_to_gguf.py", "--type", a.type, "--out", work, "--prompt-tokens", PROMPT,
                   "--n-predict", str(a.n_predict), *extra]).strip().splitlines()[-1])
    else:
        run([sys.executable, HERE / "make_model.py", "--type", a.type, "--out", work, *extra])
        run([sys.executable, HERE / "reference.py", work / "reference.npz", "--prompt-tokens", PROMPT,
             "--n-predict", str(a.n_predict), "--out", work])
    out = run([a.rayo_llama, work / "model.gguf", "--device", a.device, "--prompt-tokens", PROMPT,
               "--n-predict", str(a.n_predict), "--temp", "0", "--ignore-eos", "--logits", work / "rayo_logits.txt",
               *(["--capture"] if a.capture else [])])

    want = np.loadtxt(work / "logits.txt")
    got = np.loadtxt(work / "rayo_logits.txt")
    if want.shape != got.shape:
        print(f"logits: {got.shape[0]} values, the reference has {want.shape[0]}")
        return 1
    scale = np.abs(want).max()
    err = np.abs(got - want).max() / scale
    tol = TOLERANCE[a.type]
    print(f"{a.type} on {a.device}: logits of {len(PROMPT.split(','))} positions within {err:.2e} of max|logit| "
          f"{scale:.3f} (tolerance {tol:.0e})")

    ref_tokens = [int(t) for t in np.atleast_1d(np.loadtxt(work / "greedy.txt", dtype=np.int64))]
    margins = np.atleast_1d(np.loadtxt(work / "greedy_margins.txt"))
    line = next((l for l in out.splitlines() if l.startswith("generated:")), "generated:")
    tokens = [int(t) for t in line.split()[1:]]
    print(f"greedy: rayo {tokens}, reference {ref_tokens}")
    ok = err <= tol
    for i, (g, w) in enumerate(zip(tokens, ref_tokens)):
        if g == w:
            continue
        if margins[i] < 2 * tol * scale:
            print(f"step {i}: {g} vs {w}, within the reference's margin {margins[i]:.4f}: the sequences part here")
        else:
            print(f"step {i}: rayo picked {g}, the reference {w} (margin {margins[i]:.4f})")
            ok = False
        break
    if len(tokens) != len(ref_tokens):
        print(f"rayo generated {len(tokens)} tokens, the reference {len(ref_tokens)}")
        ok = False
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
