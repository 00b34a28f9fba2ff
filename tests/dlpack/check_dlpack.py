#!/usr/bin/env python3
"""rayo/dlpack.hpp against NumPy (and, with --torch DEVICE, PyTorch on a CUDA device), through
dlpack_shim.cpp loaded with ctypes: rayo's tensors read by the other library without a copy, and
the other library's arrays written in place by a rayo op. Usage: check_dlpack.py SHIM [--torch cuda:0]
"""
import ctypes
import sys

import numpy as np

shim = ctypes.CDLL(sys.argv[1])
shim.rayo_shim_iota.restype = ctypes.c_void_p
shim.rayo_shim_iota.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
shim.rayo_shim_double_in_place.restype = ctypes.c_double
shim.rayo_shim_double_in_place.argtypes = [ctypes.c_void_p]
shim.rayo_shim_cpu_bytes_in_use.restype = ctypes.c_uint64
shim.rayo_shim_last_error.restype = ctypes.c_char_p

api = ctypes.pythonapi
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = ctypes.c_int
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class FromRayo:
    """The DLPack protocol over a DLManagedTensor from the shim."""

    def __init__(self, managed, device):
        if not managed:
            raise RuntimeError(shim.rayo_shim_last_error().decode())
        self.managed, self.device = managed, device

    def __dlpack__(self, stream=None, **_):
        return api.PyCapsule_New(self.managed, b"dltensor", None)

    def __dlpack_device__(self):
        return self.device


def to_rayo(capsule):
    """Hands a capsule's DLManagedTensor to rayo, which owns it from then on."""
    pointer = api.PyCapsule_GetPointer(capsule, b"dltensor")
    api.PyCapsule_SetName(capsule, b"used_dltensor")
    return shim.rayo_shim_double_in_place(pointer)


def expected(rows, cols):
    return np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) * 0.5 - 3


# rayo -> NumPy: the values, and the memory is rayo's until NumPy lets go of it.
before = shim.rayo_shim_cpu_bytes_in_use()
a = np.from_dlpack(FromRayo(shim.rayo_shim_iota(b"cpu", 3, 5), (1, 0)))
check(a.shape == (3, 5) and a.dtype == np.float32, f"numpy reads rayo's [3, 5] f32 tensor: {a.shape} {a.dtype}")
check(np.array_equal(a, expected(3, 5)), "numpy sees rayo's values")
check(shim.rayo_shim_cpu_bytes_in_use() >= before + 60, "rayo's memory is held while numpy's array lives")
del a
check(shim.rayo_shim_cpu_bytes_in_use() == before, "and let go when numpy drops it (the deleter ran)")

# NumPy -> rayo: a rayo op doubles numpy's array in place (no copy), and sums it.
rng = np.random.default_rng(7)
x = rng.standard_normal((4, 7)).astype(np.float32)
original = x.copy()
total = to_rayo(x.__dlpack__())
check(np.array_equal(x, 2 * original), "rayo's add_into wrote numpy's own memory")
check(abs(total - float(np.sum(2 * original, dtype=np.float64))) < 1e-4, f"rayo's sum {total:.6f}")

# What rayo refuses, by name: float64, and a strided view.
for array, text in ((np.ones(3), "float64"), (np.ones((4, 6), np.float32)[:, ::2], "stride")):
    result = to_rayo(array.__dlpack__())
    message = shim.rayo_shim_last_error().decode()
    check(result != result and text in message, f"refused: {message}")

# PyTorch on a CUDA device, both ways.
if "--torch" in sys.argv:
    import torch

    device = sys.argv[sys.argv.index("--torch") + 1]
    ordinal = int(device.split(":")[1])
    t = torch.from_dlpack(FromRayo(shim.rayo_shim_iota(device.encode(), 64, 33), (2, ordinal)))
    check(t.is_cuda and t.shape == (64, 33), f"torch reads rayo's tensor on {t.device}")
    check(torch.equal(t.cpu(), torch.from_numpy(expected(64, 33))), "torch sees rayo's values")
    y = torch.randn(128, 96, device=f"cuda:{ordinal}")
    original = y.clone()
    torch.cuda.synchronize()
    total = to_rayo(torch.utils.dlpack.to_dlpack(y))
    check(torch.equal(y, 2 * original), "rayo's add_into wrote torch's CUDA memory")
    check(abs(total - (2 * original).double().sum().item()) < 1e-2, f"rayo's sum {total:.4f} on {device}")

print("FAILED" if failures else "all passed")
sys.exit(1 if failures else 0)
