"""q4_k, q5_k and q6_k blocks (GGUF / ggml K-quants) and q8_0, q4_0 blocks in NumPy, written from
/work/shared/QUANT.md and ggml's block layouts.

The dequantizers are exact: they evaluate the formulas in float32 in the same order as the
reference (q4_k, q5_k: (d·sc)·q − dmin·m; q6_k: (d·sc)·(q − 32); q8_0: d·q; q4_0: (q − 8)·d), so
they reproduce the stored test vectors bit for bit. q5_k's quantizer is q4_k's with 32 levels;
q8_0's and q4_0's are ggml's (the largest magnitude as ±127, or as −8). The quantizers are simple,
not the reference search: q4_k takes each 32-value sub-block's range [min(0, min x), max x] as 16
levels; q6_k takes each 16-value sub-block's largest magnitude as code −32. Both then code the
sub-block factors in 6 or 8 bits against f16 super-scales exactly as the reference does, and
re-quantize every value against the stored factors, so every block they write is valid and close to the data.

Blocks are NumPy uint8 arrays of shape (n_blocks, 144) or (n_blocks, 210); rows of a matrix are
quantized along their last axis, which must be a multiple of 256.
"""

from __future__ import annotations

import numpy as np

QK_K = 256
Q4_K_BYTES = 144
Q5_K_BYTES = 176
Q6_K_BYTES = 210
QK_0 = 32
Q8_0_BYTES = 34
Q4_0_BYTES = 18


def _blocks(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 0 or x.shape[-1] % QK_K:
        raise ValueError(f"K-quant rows must be a multiple of {QK_K} values, got shape {x.shape}")
    return x.reshape(-1, QK_K)


def _f16(x: np.ndarray) -> np.ndarray:
    """x rounded to f16 (nearest even) and read back as f32."""
    return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


def _put_f16(out: np.ndarray, at: int, v: np.ndarray) -> None:
    out[:, at:at + 2] = np.asarray(v, dtype=np.float32).astype("<f2").view(np.uint8).reshape(-1, 2)


def _get_f16(b: np.ndarray, at: int) -> np.ndarray:
    return np.ascontiguousarray(b[:, at:at + 2]).view("<f2").reshape(-1).astype(np.float32)


# ---- q4_k -----------------------------------------------------------------------------------


def _unpack_q4_k_scales(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eight 6-bit scales and mins per block from the 12 packed bytes (n, 12) -> (n, 8) each."""
    s = s.astype(np.int32)
    sc = np.empty((s.shape[0], 8), dtype=np.int32)
    m = np.empty_like(sc)
    sc[:, :4] = s[:, 0:4] & 63
    m[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)
    m[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc, m


def _pack_q4_k_scales(sc: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The inverse of _unpack_q4_k_scales for codes in 0..63."""
    s = np.empty((sc.shape[0], 12), dtype=np.int32)
    s[:, 0:4] = (sc[:, :4] & 63) | ((sc[:, 4:] >> 4) << 6)
    s[:, 4:8] = (m[:, :4] & 63) | ((m[:, 4:] >> 4) << 6)
    s[:, 8:12] = (sc[:, 4:] & 0x0F) | ((m[:, 4:] & 0x0F) << 4)
    return s.astype(np.uint8)


def dequantize_q4_k(blocks: np.ndarray) -> np.ndarray:
    """float32 values (n_blocks·256,) of q4_k blocks."""
    b = np.asarray(blocks, dtype=np.uint8).reshape(-1, Q4_K_BYTES)
    d, dmin = _get_f16(b, 0), _get_f16(b, 2)
    sc, m = _unpack_q4_k_scales(b[:, 4:16])
    d_sub = d[:, None] * sc.astype(np.float32)     # (n, 8), f32 products
    m_sub = dmin[:, None] * m.astype(np.float32)
    qs = b[:, 16:].reshape(-1, 4, 32)              # chunk c: sub-blocks 2c (low) and 2c+1 (high)
    q = np.stack([qs & 0x0F, qs >> 4], axis=2).reshape(-1, 8, 32).astype(np.float32)
    y = d_sub[:, :, None] * q - m_sub[:, :, None]  # two f32 operations, as the reference
    return y.astype(np.float32).reshape(-1)


def _chunked(quantize_blocks, x: np.ndarray, block_bytes: int) -> np.ndarray:
    """Quantizes in slices of blocks so that the temporaries of a large matrix stay small."""
    v = _blocks(x)
    out = np.empty((v.shape[0], block_bytes), dtype=np.uint8)
    step = 1 << 14
    for start in range(0, v.shape[0], step):
        out[start:start + step] = quantize_blocks(v[start:start + step])
    return out


def quantize_q4_k(x: np.ndarray) -> np.ndarray:
    """q4_k blocks (n_blocks, 144) of rows whose length is a multiple of 256."""
    return _chunked(_quantize_q4_k_blocks, x, Q4_K_BYTES)


def _k4_codes(x: np.ndarray, top: int):
    """q4_k's and q5_k's simple quantizer: each 32-value sub-block's range [min(0, min x), max x] as
    top + 1 levels, the sub-block factors in 6 bits against f16 super-scales. Returns (d, dmin,
    packed scales (n, 12), codes (n, 8, 32) in 0..top)."""
    v = x.reshape(-1, 8, 32)
    lo = np.minimum(v.min(axis=2), 0.0)                # (n, 8): offsets are never positive
    hi = v.max(axis=2)
    scale = (hi - lo) / np.float32(top)                # step of the levels
    mins = -lo                                         # positive offset subtracted on dequantization
    max_scale, max_min = scale.max(axis=1), mins.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ls = np.where(max_scale[:, None] > 0, np.minimum(63, np.rint(np.float32(63) / max_scale[:, None] * scale)), 0)
        lm = np.where(max_min[:, None] > 0, np.minimum(63, np.rint(np.float32(63) / max_min[:, None] * mins)), 0)
    ls, lm = ls.astype(np.int32), lm.astype(np.int32)
    d, dmin = _f16(max_scale / np.float32(63)), _f16(max_min / np.float32(63))
    step = d[:, None] * ls.astype(np.float32)
    offset = dmin[:, None] * lm.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.rint((v + offset[:, :, None]) / step[:, :, None])
    q = np.where(step[:, :, None] > 0, np.clip(q, 0, top), 0).astype(np.uint8)
    return d, dmin, _pack_q4_k_scales(ls, lm), q


def _quantize_q4_k_blocks(x: np.ndarray) -> np.ndarray:
    d, dmin, scales, q = _k4_codes(x, 15)
    out = np.zeros((q.shape[0], Q4_K_BYTES), dtype=np.uint8)
    _put_f16(out, 0, d)
    _put_f16(out, 2, dmin)
    out[:, 4:16] = scales
    q = q.reshape(-1, 4, 2, 32)
    out[:, 16:] = (q[:, :, 0, :] | (q[:, :, 1, :] << 4)).reshape(-1, 128)
    return out


# ---- q5_k -----------------------------------------------------------------------------------


def dequantize_q5_k(blocks: np.ndarray) -> np.ndarray:
    """float32 values (n_blocks·256,) of q5_k blocks: q4_k's with a fifth bit from qh."""
    b = np.asarray(blocks, dtype=np.uint8).reshape(-1, Q5_K_BYTES)
    d, dmin = _get_f16(b, 0), _get_f16(b, 2)
    sc, m = _unpack_q4_k_scales(b[:, 4:16])
    d_sub = d[:, None] * sc.astype(np.float32)
    m_sub = dmin[:, None] * m.astype(np.float32)
    qh = b[:, 16:48]                                # bit j of qh[l]: value 32j + l
    qs = b[:, 48:].reshape(-1, 4, 32)
    low = np.stack([qs & 0x0F, qs >> 4], axis=2).reshape(-1, 8, 32)
    high = np.stack([(qh >> j) & 1 for j in range(8)], axis=1)  # (n, 8, 32)
    q = (low | (high << 4)).astype(np.float32)
    y = d_sub[:, :, None] * q - m_sub[:, :, None]
    return y.astype(np.float32).reshape(-1)


def quantize_q5_k(x: np.ndarray) -> np.ndarray:
    """q5_k blocks (n_blocks, 176) of rows whose length is a multiple of 256."""
    return _chunked(_quantize_q5_k_blocks, x, Q5_K_BYTES)


def _quantize_q5_k_blocks(x: np.ndarray) -> np.ndarray:
    d, dmin, scales, q = _k4_codes(x, 31)
    out = np.zeros((q.shape[0], Q5_K_BYTES), dtype=np.uint8)
    _put_f16(out, 0, d)
    _put_f16(out, 2, dmin)
    out[:, 4:16] = scales
    high = (q >> 4) & 1
    out[:, 16:48] = sum((high[:, j, :] << j) for j in range(8)).astype(np.uint8)
    low = (q & 0x0F).reshape(-1, 4, 2, 32)
    out[:, 48:] = (low[:, :, 0, :] | (low[:, :, 1, :] << 4)).reshape(-1, 128)
    return out


# ---- q8_0 and q4_0: blocks of 32 ------------------------------------------------------------


def _small_blocks(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 0 or x.shape[-1] % QK_0:
        raise ValueError(f"q8_0 / q4_0 rows must be a multiple of {QK_0} values, got shape {x.shape}")
    return x.reshape(-1, QK_0)


def quantize_q8_0(x: np.ndarray) -> np.ndarray:
    """q8_0 blocks (n_blocks, 34): d = max|x| / 127, codes round(x / d)."""
    v = _small_blocks(x)
    d = np.abs(v).max(axis=1) / np.float32(127)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(d > 0, np.float32(1) / d, 0).astype(np.float32)
    q = np.rint(v * inv[:, None]).astype(np.int8)
    out = np.zeros((v.shape[0], Q8_0_BYTES), dtype=np.uint8)
    _put_f16(out, 0, d)
    out[:, 2:] = q.view(np.uint8)
    return out


def dequantize_q8_0(blocks: np.ndarray) -> np.ndarray:
    b = np.asarray(blocks, dtype=np.uint8).reshape(-1, Q8_0_BYTES)
    d = _get_f16(b, 0)
    q = np.ascontiguousarray(b[:, 2:]).view(np.int8).astype(np.float32)
    return (d[:, None] * q).astype(np.float32).reshape(-1)


def quantize_q4_0(x: np.ndarray) -> np.ndarray:
    """q4_0 blocks (n_blocks, 18): the value of largest magnitude becomes code 0 (d = it / −8),
    codes min(15, trunc(x / d + 8.5)); value i < 16 in the low nibble of byte i, 16 + i in its high."""
    v = _small_blocks(x)
    peak = np.take_along_axis(v, np.abs(v).argmax(axis=1)[:, None], axis=1)[:, 0]
    d = peak / np.float32(-8)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(d != 0, np.float32(1) / d, 0).astype(np.float32)
    q = np.minimum(15, np.trunc(v * inv[:, None] + np.float32(8.5))).astype(np.uint8)
    out = np.zeros((v.shape[0], Q4_0_BYTES), dtype=np.uint8)
    _put_f16(out, 0, d)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out


def dequantize_q4_0(blocks: np.ndarray) -> np.ndarray:
    b = np.asarray(blocks, dtype=np.uint8).reshape(-1, Q4_0_BYTES)
    d = _get_f16(b, 0)
    qs = b[:, 2:]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - np.float32(8)
    return (q * d[:, None]).astype(np.float32).reshape(-1)


# ---- q6_k -----------------------------------------------------------------------------------


def _q6_k_codes(b: np.ndarray) -> np.ndarray:
    """The 256 codes (0..63) of each block, in value order: (n, 256)."""
    ql = b[:, 0:128].reshape(-1, 2, 64)
    qh = b[:, 128:192].reshape(-1, 2, 32)
    q = np.empty((b.shape[0], 2, 4, 32), dtype=np.uint8)  # half, quarter (value 128h + 32k + l), l
    q[:, :, 0] = (ql[:, :, 0:32] & 0x0F) | (((qh >> 0) & 3) << 4)
    q[:, :, 1] = (ql[:, :, 32:64] & 0x0F) | (((qh >> 2) & 3) << 4)
    q[:, :, 2] = (ql[:, :, 0:32] >> 4) | (((qh >> 4) & 3) << 4)
    q[:, :, 3] = (ql[:, :, 32:64] >> 4) | (((qh >> 6) & 3) << 4)
    return q.reshape(-1, 256)


def dequantize_q6_k(blocks: np.ndarray) -> np.ndarray:
    """float32 values (n_blocks·256,) of q6_k blocks."""
    b = np.asarray(blocks, dtype=np.uint8).reshape(-1, Q6_K_BYTES)
    d = _get_f16(b, 208)
    scales = b[:, 192:208].view(np.int8).astype(np.float32)     # one per 16 values
    q = _q6_k_codes(b).astype(np.int32) - 32
    factor = (d[:, None] * scales)[:, :, None]                  # f32 product d·sc first
    y = factor * q.reshape(-1, 16, 16).astype(np.float32)
    return y.astype(np.float32).reshape(-1)


def quantize_q6_k(x: np.ndarray) -> np.ndarray:
    """q6_k blocks (n_blocks, 210) of rows whose length is a multiple of 256."""
    return _chunked(_quantize_q6_k_blocks, x, Q6_K_BYTES)


def _quantize_q6_k_blocks(x: np.ndarray) -> np.ndarray:
    v = x.reshape(-1, 16, 16)
    idx = np.abs(v).argmax(axis=2)
    peak = np.take_along_axis(v, idx[:, :, None], axis=2)[:, :, 0]  # largest magnitude, sign kept
    scale = peak / np.float32(-32)                                  # the peak becomes code −32
    top = np.take_along_axis(scale, np.abs(scale).argmax(axis=1)[:, None], axis=1)[:, 0]
    live = np.abs(top) >= 1e-15
    with np.errstate(divide="ignore", invalid="ignore"):
        iscale = np.where(live, np.float32(-128) / top, 0).astype(np.float32)
        d = _f16(np.where(live, np.float32(1) / iscale, 0))
    sc = np.minimum(127, np.rint(iscale[:, None] * scale)).astype(np.int8)
    factor = d[:, None] * sc.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.rint(v / factor[:, :, None])
    q = np.where(factor[:, :, None] != 0, np.clip(q, -32, 31), 0).astype(np.int32) + 32
    q = np.where(live[:, None, None], q, 0).astype(np.uint8).reshape(-1, 2, 4, 32)
    out = np.zeros((v.shape[0], Q6_K_BYTES), dtype=np.uint8)
    lo = q & 0x0F
    ql = np.concatenate([lo[:, :, 0] | (lo[:, :, 2] << 4), lo[:, :, 1] | (lo[:, :, 3] << 4)], axis=2)
    out[:, 0:128] = ql.reshape(-1, 128)
    qh = (q[:, :, 0] >> 4) | ((q[:, :, 1] >> 4) << 2) | ((q[:, :, 2] >> 4) << 4) | ((q[:, :, 3] >> 4) << 6)
    out[:, 128:192] = qh.reshape(-1, 64)
    out[:, 192:208] = np.where(live[:, None], sc, 0).view(np.uint8)
    _put_f16(out, 208, np.where(live, d, 0))
    return out


# ---- the stored test vectors ------------------------------------------------------------------


def read_vectors(path) -> dict:
    """A test-vector file: u32 magic "RYQV", version 1, type (0 q4_k, 1 q6_k, 2 q8_k), rows, cols,
    block_bytes; f32 input[rows·cols]; the blocks; f32 dequantized[rows·cols]."""
    raw = np.fromfile(path, dtype=np.uint8)
    magic, version, kind, rows, cols, block_bytes = raw[:24].view("<u4")
    if magic != 0x56515952 or version != 1:
        raise ValueError(f"{path}: not a version-1 RYQV test-vector file")
    n = int(rows) * int(cols)
    nb = n // QK_K
    at = 24
    inputs = raw[at:at + 4 * n].view("<f4")
    at += 4 * n
    blocks = raw[at:at + nb * int(block_bytes)].reshape(nb, int(block_bytes))
    at += nb * int(block_bytes)
    dequantized = raw[at:at + 4 * n].view("<f4")
    if at + 4 * n != raw.size:
        raise ValueError(f"{path}: size does not match the header")
    return {"type": int(kind), "rows": int(rows), "cols": int(cols), "input": inputs,
            "blocks": blocks, "dequantized": dequantized}
