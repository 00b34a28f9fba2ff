"""A small GGUF v3 writer and a reader of metadata and tensor descriptions.

Written from the GGUF specification (ggml's docs/gguf.md): a little-endian file of

    header   u32 magic "GGUF", u32 version (3), u64 tensor_count, u64 metadata_kv_count
    metadata key (string), u32 value type, value                         -- kv_count times
    tensors  name (string), u32 n_dims, u64 ne[n_dims], u32 ggml type,
             u64 offset (from the start of the data section)               -- tensor_count times
    padding  to general.alignment (32 when the key is absent)
    data     each tensor at its offset, every offset a multiple of the alignment

A string is a u64 byte count and UTF-8 bytes without a terminator; an array is a u32 element type,
a u64 count and the elements. ne[0] is the innermost (fastest-varying) axis, so a NumPy array of
shape (out, in) is described by ne = [in, out]. Block-quantized types pack ne[0] in blocks.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Callable, Iterable, Union

import numpy as np

GGUF_MAGIC = 0x46554747  # the bytes "GGUF" read as a little-endian u32
GGUF_VERSION = 3
DEFAULT_ALIGNMENT = 32
ALIGNMENT_KEY = "general.alignment"


class ValueType(IntEnum):
    """Metadata value types of the GGUF specification."""
    U8 = 0
    I8 = 1
    U16 = 2
    I16 = 3
    U32 = 4
    I32 = 5
    F32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    U64 = 10
    I64 = 11
    F64 = 12


# struct formats of the fixed-size value types.
_SCALAR_FORMAT = {
    ValueType.U8: "<B", ValueType.I8: "<b", ValueType.U16: "<H", ValueType.I16: "<h",
    ValueType.U32: "<I", ValueType.I32: "<i", ValueType.F32: "<f", ValueType.BOOL: "<?",
    ValueType.U64: "<Q", ValueType.I64: "<q", ValueType.F64: "<d",
}


class GGMLType(IntEnum):
    """The ggml tensor types this tooling writes (ids as ggml numbers them)."""
    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q5_0 = 6  # written only as a type rayo-llama refuses (tests/llama/check_bad_input.py)
    Q8_0 = 8
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    BF16 = 30


# (values per block, bytes per block) of each type.
BLOCK_LAYOUT = {
    GGMLType.F32: (1, 4),
    GGMLType.F16: (1, 2),
    GGMLType.Q4_0: (32, 18),
    GGMLType.Q5_0: (32, 22),
    GGMLType.Q8_0: (32, 34),
    GGMLType.Q5_K: (256, 176),
    GGMLType.BF16: (1, 2),
    GGMLType.Q4_K: (256, 144),
    GGMLType.Q6_K: (256, 210),
}

TYPE_BY_NAME = {"f32": GGMLType.F32, "f16": GGMLType.F16, "bf16": GGMLType.BF16,
                "q4_k": GGMLType.Q4_K, "q6_k": GGMLType.Q6_K, "q8_0": GGMLType.Q8_0, "q4_0": GGMLType.Q4_0,
                "q5_k": GGMLType.Q5_K}


def tensor_nbytes(ggml_type: GGMLType, ne: Iterable[int]) -> int:
    """Bytes of a tensor; ne[0] must hold whole blocks."""
    ne = list(ne)
    values, nbytes = BLOCK_LAYOUT[GGMLType(ggml_type)]
    if ne and ne[0] % values:
        raise ValueError(f"ne[0] = {ne[0]} is not a multiple of the {GGMLType(ggml_type).name} block of {values}")
    count = int(np.prod(ne, dtype=np.int64)) if ne else 1
    return count // values * nbytes


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


# ---- writing ------------------------------------------------------------------------------------


@dataclass
class Metadatum:
    """One key/value pair; `element_type` is set for arrays."""
    key: str
    value_type: ValueType
    value: object
    element_type: ValueType | None = None


TensorData = Union[bytes, bytearray, memoryview, Callable[[], bytes]]


@dataclass
class TensorEntry:
    name: str
    ggml_type: GGMLType
    ne: list[int]
    data: TensorData  # the bytes, or a function producing them when the file is written


def _encode_string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _encode_value(value_type: ValueType, value: object, element_type: ValueType | None) -> bytes:
    if value_type == ValueType.STRING:
        return _encode_string(value)
    if value_type == ValueType.ARRAY:
        if element_type is None:
            raise ValueError("an array needs an element type")
        items = list(value)
        out = [struct.pack("<IQ", int(element_type), len(items))]
        if element_type == ValueType.STRING:
            out.extend(_encode_string(s) for s in items)
        elif element_type == ValueType.ARRAY:
            raise ValueError("nested arrays are not written by this tool")
        else:
            fmt = _SCALAR_FORMAT[element_type]
            out.append(struct.pack("<" + fmt[1] * len(items), *items))
        return b"".join(out)
    return struct.pack(_SCALAR_FORMAT[value_type], value)


class GGUFWriter:
    """Collects metadata and tensors in order, then writes one GGUF v3 file.

    Tensor data may be given as a function; it is called once, in order, while the file is written,
    so a large model never needs all its tensors in memory at once.
    """

    def __init__(self, alignment: int = DEFAULT_ALIGNMENT):
        if alignment <= 0 or alignment & (alignment - 1):
            raise ValueError(f"alignment {alignment} is not a power of two")
        self.alignment = alignment
        self.metadata: list[Metadatum] = []
        self.tensors: list[TensorEntry] = []
        self.add_u32(ALIGNMENT_KEY, alignment)

    # metadata -------------------------------------------------------------------------------------
    def add(self, key: str, value_type: ValueType, value: object, element_type: ValueType | None = None) -> None:
        if any(m.key == key for m in self.metadata):
            raise ValueError(f"duplicate metadata key {key!r}")
        self.metadata.append(Metadatum(key, ValueType(value_type), value,
                                       None if element_type is None else ValueType(element_type)))

    def add_string(self, key: str, value: str) -> None:
        self.add(key, ValueType.STRING, value)

    def add_u32(self, key: str, value: int) -> None:
        self.add(key, ValueType.U32, int(value))

    def add_i32(self, key: str, value: int) -> None:
        self.add(key, ValueType.I32, int(value))

    def add_f32(self, key: str, value: float) -> None:
        self.add(key, ValueType.F32, float(value))

    def add_bool(self, key: str, value: bool) -> None:
        self.add(key, ValueType.BOOL, bool(value))

    def add_array(self, key: str, element_type: ValueType, values: Iterable) -> None:
        self.add(key, ValueType.ARRAY, list(values), element_type)

    # tensors --------------------------------------------------------------------------------------
    def add_tensor(self, name: str, ggml_type: GGMLType, ne: Iterable[int], data: TensorData) -> None:
        """A tensor of ggml dimensions `ne` (ne[0] innermost) whose encoded bytes are `data`."""
        ne = [int(n) for n in ne]
        if not 1 <= len(ne) <= 4:
            raise ValueError(f"tensor {name!r}: {len(ne)} dimensions (GGUF allows 1 to 4)")
        if any(t.name == name for t in self.tensors):
            raise ValueError(f"duplicate tensor name {name!r}")
        tensor_nbytes(ggml_type, ne)  # checks whole blocks
        if not callable(data) and len(data) != tensor_nbytes(ggml_type, ne):
            raise ValueError(f"tensor {name!r}: {len(data)} bytes, expected {tensor_nbytes(ggml_type, ne)}")
        self.tensors.append(TensorEntry(name, GGMLType(ggml_type), ne, data))

    # output ---------------------------------------------------------------------------------------
    def _head(self) -> bytes:
        parts = [struct.pack("<IIQQ", GGUF_MAGIC, GGUF_VERSION, len(self.tensors), len(self.metadata))]
        for m in self.metadata:
            parts.append(_encode_string(m.key))
            parts.append(struct.pack("<I", int(m.value_type)))
            parts.append(_encode_value(m.value_type, m.value, m.element_type))
        offset = 0
        for t in self.tensors:
            parts.append(_encode_string(t.name))
            parts.append(struct.pack("<I", len(t.ne)))
            parts.append(struct.pack("<" + "Q" * len(t.ne), *t.ne))
            parts.append(struct.pack("<IQ", int(t.ggml_type), offset))
            offset = _align(offset + tensor_nbytes(t.ggml_type, t.ne), self.alignment)
        head = b"".join(parts)
        return head + b"\0" * (_align(len(head), self.alignment) - len(head))

    def write(self, path: str | Path) -> None:
        with open(path, "wb") as f:
            f.write(self._head())
            for t in self.tensors:
                data = t.data() if callable(t.data) else t.data
                expected = tensor_nbytes(t.ggml_type, t.ne)
                if len(data) != expected:
                    raise ValueError(f"tensor {t.name!r}: produced {len(data)} bytes, expected {expected}")
                f.write(data)
                f.write(b"\0" * (_align(expected, self.alignment) - expected))


# ---- reading ------------------------------------------------------------------------------------


@dataclass
class TensorInfo:
    name: str
    ne: list[int]
    ggml_type: int
    offset: int  # from the start of the data section

    @property
    def nbytes(self) -> int:
        return tensor_nbytes(self.ggml_type, self.ne)


class _Cursor:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError(f"GGUF truncated: need {n} bytes at offset {self.pos}, file has {len(self.data)}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def scalar(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return bytes(self.take(self.scalar("<Q"))).decode("utf-8")

    def value(self, value_type: int):
        """(value, element type or None)."""
        vt = ValueType(value_type)
        if vt == ValueType.STRING:
            return self.string(), None
        if vt == ValueType.ARRAY:
            et = ValueType(self.scalar("<I"))
            count = self.scalar("<Q")
            if et == ValueType.STRING:
                return [self.string() for _ in range(count)], et
            if et == ValueType.ARRAY:
                return [self.value(ValueType.ARRAY)[0] for _ in range(count)], et
            fmt = _SCALAR_FORMAT[et]
            size = struct.calcsize(fmt)
            return list(struct.unpack("<" + fmt[1] * count, self.take(size * count))), et
        return self.scalar(_SCALAR_FORMAT[vt]), None


class GGUFReader:
    """Reads a GGUF file's header, metadata and tensor descriptions; tensor bytes on request."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._data = memoryview(self.path.read_bytes())
        c = _Cursor(self._data)
        magic, self.version = c.scalar("<I"), c.scalar("<I")
        if magic != GGUF_MAGIC:
            raise ValueError(f"{path}: not a GGUF file (magic {magic:#010x})")
        if self.version not in (2, 3):
            raise ValueError(f"{path}: GGUF version {self.version} is not read here")
        n_tensors, n_kv = c.scalar("<Q"), c.scalar("<Q")
        self.metadata: dict[str, Metadatum] = {}
        for _ in range(n_kv):
            key = c.string()
            vt = ValueType(c.scalar("<I"))
            value, et = c.value(vt)
            self.metadata[key] = Metadatum(key, vt, value, et)
        self.tensors: dict[str, TensorInfo] = {}
        for _ in range(n_tensors):
            name = c.string()
            n_dims = c.scalar("<I")
            ne = [c.scalar("<Q") for _ in range(n_dims)]
            ggml_type = c.scalar("<I")
            offset = c.scalar("<Q")
            self.tensors[name] = TensorInfo(name, ne, ggml_type, offset)
        self.alignment = int(self.value(ALIGNMENT_KEY, DEFAULT_ALIGNMENT))
        self.data_offset = _align(c.pos, self.alignment)

    def value(self, key: str, default=None):
        m = self.metadata.get(key)
        return default if m is None else m.value

    def tensor_bytes(self, name: str) -> bytes:
        info = self.tensors[name]
        start = self.data_offset + info.offset
        if start + info.nbytes > len(self._data):
            raise ValueError(f"tensor {name!r} runs past the end of {self.path}")
        return bytes(self._data[start:start + info.nbytes])

    def vocabulary(self) -> list[Metadatum]:
        """The file's `tokenizer.*` metadata, in file order, to copy into another file."""
        return [m for k, m in self.metadata.items() if k.startswith("tokenizer.")]


# ---- encoding float arrays ----------------------------------------------------------------------


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns of float32 values, rounded to nearest even (NaN stays a quiet NaN)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def encode(x: np.ndarray, ggml_type: GGMLType) -> bytes:
    """The GGUF bytes of a row-major float array (its last axis is ne[0])."""
    import kquant  # local module; imported here so the writer alone needs only NumPy

    t = GGMLType(ggml_type)
    x = np.asarray(x, dtype=np.float32)
    if t == GGMLType.F32:
        return x.astype("<f4").tobytes()
    if t == GGMLType.F16:
        return x.astype("<f2").tobytes()
    if t == GGMLType.BF16:
        return f32_to_bf16_bits(x).astype("<u2").tobytes()
    if t == GGMLType.Q4_K:
        return kquant.quantize_q4_k(x).tobytes()
    if t == GGMLType.Q6_K:
        return kquant.quantize_q6_k(x).tobytes()
    if t == GGMLType.Q5_K:
        return kquant.quantize_q5_k(x).tobytes()
    if t == GGMLType.Q8_0:
        return kquant.quantize_q8_0(x).tobytes()
    if t == GGMLType.Q4_0:
        return kquant.quantize_q4_0(x).tobytes()
    raise ValueError(f"cannot encode {t.name}")


def decode(data: bytes, ggml_type: GGMLType, ne: Iterable[int]) -> np.ndarray:
    """The float32 values of a tensor's bytes, shaped row-major (reversed ne)."""
    import kquant

    t = GGMLType(ggml_type)
    shape = tuple(reversed([int(n) for n in ne]))
    if t == GGMLType.F32:
        flat = np.frombuffer(data, dtype="<f4").astype(np.float32)
    elif t == GGMLType.F16:
        flat = np.frombuffer(data, dtype="<f2").astype(np.float32)
    elif t == GGMLType.BF16:
        flat = bf16_bits_to_f32(np.frombuffer(data, dtype="<u2"))
    elif t == GGMLType.Q4_K:
        flat = kquant.dequantize_q4_k(np.frombuffer(data, dtype=np.uint8))
    elif t == GGMLType.Q6_K:
        flat = kquant.dequantize_q6_k(np.frombuffer(data, dtype=np.uint8))
    elif t == GGMLType.Q5_K:
        flat = kquant.dequantize_q5_k(np.frombuffer(data, dtype=np.uint8))
    elif t == GGMLType.Q8_0:
        flat = kquant.dequantize_q8_0(np.frombuffer(data, dtype=np.uint8))
    elif t == GGMLType.Q4_0:
        flat = kquant.dequantize_q4_0(np.frombuffer(data, dtype=np.uint8))
    else:
        raise ValueError(f"cannot decode ggml type {int(ggml_type)}")
    return flat.reshape(shape)


def add_array_tensor(writer: GGUFWriter, name: str, x: np.ndarray, ggml_type: GGMLType) -> None:
    """Adds a row-major float array as a tensor of `ggml_type` (ne = reversed shape)."""
    writer.add_tensor(name, ggml_type, list(reversed(x.shape)), encode(x, ggml_type))
