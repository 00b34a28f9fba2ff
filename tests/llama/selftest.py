#!/usr/bin/env python3
"""Self-test of the rayo-llama reference tooling (run by ctest as llama.reference_tooling):
  1. a written GGUF file reads back the same (metadata of every type, tensors of every type,
     alignment), a vocabulary copies across files, and make_model's GGUF agrees with its npz;
  2. the K-quant dequantizers reproduce tests/data's vectors bit for bit, and the quantizers'
     blocks decode close to the data;
  3. the Q/K row interleave with ggml's adjacent-pair rope equals Hugging Face's rotate_half rope;
  4. reference.py gives the same files on two runs.
Exits non-zero on the first failure."""

from __future__ import annotations

import filecmp
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gguf_writer as gw  # noqa: E402
import kquant  # noqa: E402
import llama_gguf as lg  # noqa: E402
from gguf_writer import GGMLType, ValueType  # noqa: E402

DATA = HERE.parent / "data"


def check(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(what)


# ---- 1. GGUF ----------------------------------------------------------------------------------


def gguf_round_trip(tmp: Path) -> str:
    rng = np.random.default_rng(7)
    w = gw.GGUFWriter()
    scalars = [("t.u8", ValueType.U8, 200), ("t.i8", ValueType.I8, -100), ("t.u16", ValueType.U16, 60000),
               ("t.i16", ValueType.I16, -30000), ("t.u32", ValueType.U32, 4000000000), ("t.i32", ValueType.I32, -7),
               ("t.f32", ValueType.F32, 0.5), ("t.bool", ValueType.BOOL, True), ("t.str", ValueType.STRING, "▁héllo"),
               ("t.u64", ValueType.U64, 1 << 40), ("t.i64", ValueType.I64, -(1 << 40)), ("t.f64", ValueType.F64, 0.1)]
    for key, vt, v in scalars:
        w.add(key, vt, v)
    w.add_array("t.strings", ValueType.STRING, ["a", "", "<0x0A>"])
    w.add_array("t.floats", ValueType.F32, [1.5, -2.0])
    w.add_array("t.ints", ValueType.I32, [1, -2, 3])
    w.add_array("t.empty", ValueType.U8, [])
    arrays = {}
    for name, t, shape in [("a.f32", GGMLType.F32, (3, 5)), ("b.f16", GGMLType.F16, (7,)),
                           ("c.bf16", GGMLType.BF16, (2, 3, 4)), ("d.q4_k", GGMLType.Q4_K, (3, 512)),
                           ("e.q6_k", GGMLType.Q6_K, (2, 256))]:
        arrays[name] = (rng.standard_normal(shape).astype(np.float32), t)
        gw.add_array_tensor(w, name, arrays[name][0], t)
    path = tmp / "round_trip.gguf"
    w.write(path)

    r = gw.GGUFReader(path)
    check(r.version == 3 and r.alignment == 32 and r.data_offset % 32 == 0, "header / alignment")
    for key, vt, v in scalars:
        m = r.metadata[key]
        got = m.value if vt not in (ValueType.F32,) else np.float32(m.value)
        check(m.value_type == vt and got == v, f"metadata {key}: {m.value_type.name} {m.value!r}")
    check(r.value("t.strings") == ["a", "", "<0x0A>"] and r.value("t.floats") == [1.5, -2.0]
          and r.value("t.ints") == [1, -2, 3] and r.value("t.empty") == [], "metadata arrays")
    check(list(r.tensors) == list(arrays), "tensor order")
    for name, (x, t) in arrays.items():
        info = r.tensors[name]
        check(info.ne == list(reversed(x.shape)) and info.ggml_type == t and info.offset % 32 == 0,
              f"tensor info {name}: {info}")
        data = r.tensor_bytes(name)
        check(data == gw.encode(x, t), f"tensor bytes {name}")
        back = gw.decode(data, t, info.ne)
        exact = {GGMLType.F32: x, GGMLType.F16: x.astype(np.float16).astype(np.float32)}.get(t)
        if exact is not None:
            check(np.array_equal(back, exact), f"decoded {name}")
        else:
            tol = {GGMLType.BF16: 2 ** -8, GGMLType.Q4_K: 0.3, GGMLType.Q6_K: 0.08}[t]
            check(np.max(np.abs(back - x)) <= tol * np.max(np.abs(x)), f"decoded {name} error")
    check(gw.f32_to_bf16_bits(np.array([1.00390625, 1.01171875], np.float32)).tolist() == [0x3F80, 0x3F82],
          "bf16 rounds half to even")

    # A vocabulary copied from one file into another reads back the same.
    lg.write_llama_gguf(tmp / "vocab_source.gguf", lg.HParams(n_layer=1), _random_weights(lg.HParams(n_layer=1)),
                        "f32", keep_reference=False)
    vocab = lg.copied_vocabulary(tmp / "vocab_source.gguf")
    w2 = gw.GGUFWriter()
    for m in vocab:
        w2.add(m.key, m.value_type, m.value, m.element_type)
    w2.write(tmp / "vocab_copy.gguf")
    copy = gw.GGUFReader(tmp / "vocab_copy.gguf").vocabulary()
    check([(m.key, m.value_type, m.element_type, m.value) for m in copy] ==
          [(m.key, m.value_type, m.element_type, m.value) for m in vocab], "copied vocabulary")
    return f"{len(scalars) + 4} metadata entries of every value type and {len(arrays)} tensor types round-trip; " \
           f"vocabulary of {lg.vocabulary_size(vocab)} tokens copies"


def _random_weights(hp: lg.HParams) -> dict:
    rng = np.random.default_rng(3)
    return {k: rng.standard_normal(s).astype(np.float32) * 0.1 for k, s in lg.hf_shapes(hp).items()}


def model_matches_npz(tmp: Path) -> str:
    """make_model's q4_k_m file: the planned types, and its decoded, un-permuted tensors = the npz."""
    out = tmp / "q4_k_m"
    subprocess.run([sys.executable, str(HERE / "make_model.py"), "--type", "q4_k_m", "--rope-freqs",
                    "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
    r = gw.GGUFReader(out / "model.gguf")
    npz = np.load(out / "reference.npz")
    hp = lg.HParams()
    check(r.value("general.architecture") == "llama" and r.value("llama.attention.head_count_kv") == 2, "keys")
    q6 = sorted(n for n, t in r.tensors.items() if t.ggml_type == GGMLType.Q6_K)
    check(q6 == ["blk.1.attn_v.weight", "blk.1.ffn_down.weight", "output.weight"], f"Q4_K_M mix: q6_k on {q6}")
    for gguf_name, hf_name in lg.tensor_names(hp, tie=False):
        info = r.tensors[gguf_name]
        x = gw.decode(r.tensor_bytes(gguf_name), info.ggml_type, info.ne)
        heads = hp.n_head if ".attn_q." in gguf_name else hp.n_head_kv if ".attn_k." in gguf_name else 0
        if heads:
            x = lg.from_gguf_rows(x, heads)
        check(np.array_equal(x, npz[hf_name]), f"{gguf_name} decodes to the npz's {hf_name}")
    check(np.array_equal(gw.decode(r.tensor_bytes("rope_freqs.weight"), GGMLType.F32, [16]), npz["rope_freqs"]),
          "rope_freqs")
    return f"q4_k_m model: {len(r.tensors)} tensors decode to reference.npz (q6_k on {', '.join(q6)})"


# ---- 2. K-quants ------------------------------------------------------------------------------


def kquant_vectors() -> str:
    lines = []
    for name, deq, quant, bound in [("q4_k", kquant.dequantize_q4_k, kquant.quantize_q4_k, 0.09),
                                    ("q6_k", kquant.dequantize_q6_k, kquant.quantize_q6_k, 0.025)]:
        v = kquant.read_vectors(DATA / f"{name}_seed1.bin")
        y = deq(v["blocks"])
        check(np.array_equal(y.view(np.uint32), v["dequantized"].view(np.uint32)), f"{name} dequantization bits")
        x = v["input"].reshape(v["rows"], v["cols"])
        ref = v["dequantized"].reshape(x.shape)
        mine = deq(quant(x)).reshape(x.shape)
        for g in range(v["rows"] // 4):  # ten kinds of data, four rows each
            rows = slice(4 * g, 4 * g + 4)
            norm = np.linalg.norm(x[rows])
            if norm == 0:
                continue
            e_mine = np.linalg.norm(x[rows] - mine[rows]) / norm
            e_ref = np.linalg.norm(x[rows] - ref[rows]) / norm
            check(e_mine <= 1.5 * e_ref + 1e-6, f"{name} group {g}: error {e_mine:.4f} vs the reference's {e_ref:.4f}")
        e_normal = np.linalg.norm(x[:4] - mine[:4]) / np.linalg.norm(x[:4])
        check(e_normal < bound, f"{name} round-trip error {e_normal:.4f} on normal data")
        lines.append(f"{name}: {y.size} values bit-exact, round trip {e_normal:.4f}")
    return "; ".join(lines)


# ---- 3. rope conventions ---------------------------------------------------------------------


def rope_rotate_half(x: np.ndarray, positions: np.ndarray, inv_freq: np.ndarray) -> np.ndarray:
    """Hugging Face: dimension i pairs with i + d/2, both at frequency i."""
    half = x.shape[-1] // 2
    angle = np.outer(positions, inv_freq)                                  # [T, d/2]
    cos, sin = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def rope_adjacent(x: np.ndarray, positions: np.ndarray, inv_freq: np.ndarray) -> np.ndarray:
    """ggml's normal rope: dimension 2i pairs with 2i + 1 at frequency i."""
    angle = np.outer(positions, inv_freq)
    cos, sin = np.cos(angle), np.sin(angle)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def rope_equivalence() -> str:
    check(lg.gguf_row_order(8).tolist() == [0, 4, 1, 5, 2, 6, 3, 7], "row order of one head of 8")
    rng = np.random.default_rng(11)
    n_head, n_kv, d, width, T = 4, 2, 16, 48, 9
    positions = np.arange(T, dtype=np.float64)
    x = rng.standard_normal((T, width))
    wq, wk = rng.standard_normal((n_head * d, width)), rng.standard_normal((n_kv * d, width))
    worst = 0.0
    for factors in (np.ones(d // 2), 1 + 7 * rng.random(d // 2)):
        inv_freq = 10000.0 ** (-np.arange(0, d, 2) / d) / factors

        def heads(w, n):
            return (x @ w.T).reshape(T, n, d).transpose(1, 0, 2)

        q_hf = rope_rotate_half(heads(wq, n_head), positions, inv_freq)
        k_hf = rope_rotate_half(heads(wk, n_kv), positions, inv_freq)
        q_gg = rope_adjacent(heads(lg.to_gguf_rows(wq, n_head), n_head), positions, inv_freq)
        k_gg = rope_adjacent(heads(lg.to_gguf_rows(wk, n_kv), n_kv), positions, inv_freq)
        order = lg.gguf_row_order(d)
        worst = max(worst, np.abs(q_gg - q_hf[..., order]).max(), np.abs(k_gg - k_hf[..., order]).max())
        rep = n_head // n_kv
        s_hf = q_hf @ np.repeat(k_hf, rep, axis=0).transpose(0, 2, 1)
        s_gg = q_gg @ np.repeat(k_gg, rep, axis=0).transpose(0, 2, 1)
        worst = max(worst, np.abs(s_hf - s_gg).max() / np.abs(s_hf).max())
    check(worst < 1e-12, f"rope conventions differ by {worst}")
    check(np.array_equal(lg.from_gguf_rows(lg.to_gguf_rows(wq, n_head), n_head), wq), "un-permute")
    return f"interleaved rows + adjacent-pair rope = rotate_half rope (max difference {worst:.1e})"


# ---- 4. reference determinism ----------------------------------------------------------------


def reference_deterministic(tmp: Path) -> str:
    model = tmp / "f32"
    subprocess.run([sys.executable, str(HERE / "make_model.py"), "--type", "f32", "--out", str(model)],
                   check=True, stdout=subprocess.DEVNULL)
    files = ["logits.txt", "greedy.txt", "decode_logits.txt", "greedy_margins.txt"]
    for run in ("a", "b"):
        subprocess.run([sys.executable, str(HERE / "reference.py"), str(model / "reference.npz"),
                        "--prompt-tokens", "1,300,301,302,42,7", "--n-predict", "8", "--out", str(tmp / run)],
                       check=True, stdout=subprocess.DEVNULL)
    for f in files:
        check(filecmp.cmp(tmp / "a" / f, tmp / "b" / f, shallow=False), f"reference.py {f} differs between runs")
    greedy = (tmp / "a" / "greedy.txt").read_text().split()
    check(len(greedy) == 8 and len((tmp / "a" / "logits.txt").read_text().split()) == 6 * 512, "output sizes")
    return f"two runs identical, greedy {','.join(greedy)}"


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        steps = [("gguf round trip", lambda: gguf_round_trip(tmp)),
                 ("gguf vs npz", lambda: model_matches_npz(tmp)),
                 ("k-quants", kquant_vectors),
                 ("rope", rope_equivalence),
                 ("reference", lambda: reference_deterministic(tmp))]
        for name, step in steps:
            try:
                print(f"[ ok ] {name}: {step()}")
            except AssertionError as e:
                print(f"[FAIL] {name}: {e}")
                return 1
    print("selftest passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
