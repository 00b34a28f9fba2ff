#!/usr/bin/env python3
"""rayo-llama on bad input: each case must print a message naming the problem and exit with code 2.

    check_bad_input.py RAYO_LLAMA --work DIR

The cases are variations of a tiny f16 model (another architecture, a missing key, a missing
tensor, a tensor of the wrong shape or of a type rayo-llama does not take, heads that do not
divide, a context past int32 positions, a KV cache of terabytes that the CPU cannot allocate) and
bad requests on a good model (a token outside the vocabulary, a prompt longer than the context, a
token id that is not a number).
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gguf_writer as gw  # noqa: E402


def rewrite(src: Path, dst: Path, drop_key=None, set_key=None, drop_tensor=None, change_tensor=None,
            set_key2=None) -> None:
    """A copy of src with one key dropped, a key or two replaced or added, or one tensor dropped or changed."""
    r = gw.GGUFReader(src)
    w = gw.GGUFWriter(r.alignment)
    sets = {s[0]: s for s in (set_key, set_key2) if s}
    for key, m in r.metadata.items():
        if key == gw.ALIGNMENT_KEY or key == drop_key:
            continue
        if key in sets:
            w.add(key, sets[key][1], sets.pop(key)[2])
            continue
        w.add(key, m.value_type, m.value, m.element_type)
    for key, value_type, value in sets.values():
        w.add(key, value_type, value)
    for name, t in r.tensors.items():
        if name == drop_tensor:
            continue
        ggml_type, ne, data = gw.GGMLType(t.ggml_type), list(t.ne), r.tensor_bytes(name)
        if change_tensor and name == change_tensor[0]:
            ggml_type, ne, data = change_tensor[1], change_tensor[2], change_tensor[3]
        w.add_tensor(name, ggml_type, ne, data)
    w.write(dst)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rayo_llama", type=Path)
    p.add_argument("--work", required=True, type=Path)
    a = p.parse_args()
    work = a.work
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, HERE / "make_model.py", "--type", "f16", "--out", work, "--no-reference",
                    "--hidden", "32", "--ffn", "64", "--heads", "4", "--kv-heads", "2", "--vocab", "300",
                    "--context", "16"],
                   check=True, capture_output=True)
    good = work / "model.gguf"
    r = gw.GGUFReader(good)
    q = r.tensors["blk.0.attn_q.weight"]
    f16_bytes = r.tensor_bytes("blk.0.attn_q.weight")

    files = {
        "architecture": (dict(set_key=("general.architecture", gw.ValueType.STRING, "gpt2")), ["architecture", "gpt2"]),
        "missing_key": (dict(drop_key="llama.block_count"), ["llama.block_count"]),
        "missing_tensor": (dict(drop_tensor="blk.1.ffn_down.weight"), ["blk.1.ffn_down.weight"]),
        "shape": (dict(change_tensor=("blk.0.attn_q.weight", gw.GGMLType.F16, [q.ne[0], q.ne[1] // 2],
                                      f16_bytes[:len(f16_bytes) // 2])), ["blk.0.attn_q.weight", "shape"]),
        "type": (dict(change_tensor=("blk.0.attn_q.weight", gw.GGMLType.Q5_0, [q.ne[0], q.ne[1]],
                                     bytes(gw.tensor_nbytes(gw.GGMLType.Q5_0, q.ne)))),
                 ["blk.0.attn_q.weight", "Q5_0"]),
        "heads": (dict(set_key=("llama.attention.head_count_kv", gw.ValueType.U32, 3)), ["head_count_kv", "3"]),
        "context": (dict(set_key=("llama.context_length", gw.ValueType.U64, 2**31)), ["2147483648", "positions"]),
    }
    failures = 0

    def expect(what, args, words):
        nonlocal failures
        done = subprocess.run([a.rayo_llama, *(x if isinstance(x, bytes) else str(x) for x in args)],
                              capture_output=True, text=True, errors="replace")
        ok = done.returncode == 2 and all(w in done.stderr for w in words)
        print(f"{'ok' if ok else 'FAILED'} {what}: exit {done.returncode}: {done.stderr.strip()}")
        failures += not ok

    for name, (change, words) in files.items():
        path = work / f"bad_{name}.gguf"
        rewrite(good, path, **change)
        expect(name, [path, "--device", "cpu", "--prompt-tokens", "1,2"], words)
    # A KV cache of 2 TiB a layer (2^31 - 1 positions of one 256-wide head): OutOfMemory, unless
    # the kernel grants any allocation (vm.overcommit_memory = 1) and would then fill it.
    overcommit = Path("/proc/sys/vm/overcommit_memory")
    if overcommit.exists() and overcommit.read_text().strip() == "1":
        print("skipped KV cache out of memory: vm.overcommit_memory is 1")
    elif "ASAN_OPTIONS" in os.environ:
        print("skipped KV cache out of memory: AddressSanitizer's allocator aborts on a 2 TiB request")
    else:
        wide = work / "wide"
        subprocess.run([sys.executable, HERE / "make_model.py", "--type", "f16", "--out", wide, "--no-reference",
                        "--layers", "1", "--hidden", "256", "--ffn", "32", "--heads", "1", "--kv-heads", "1",
                        "--vocab", "300", "--context", "16"], check=True, capture_output=True)
        path = work / "bad_kv_cache.gguf"
        rewrite(wide / "model.gguf", path, set_key=("llama.context_length", gw.ValueType.U32, 2**31 - 1))
        expect("KV cache out of memory", [path, "--device", "cpu", "--prompt-tokens", "1,2"],
               ["cannot allocate", "KV cache of 2147483647 tokens"])
    expect("token outside the vocabulary", [good, "--device", "cpu", "--prompt-tokens", "1,300"], ["300", "vocabulary"])
    expect("negative token", [good, "--device", "cpu", "--prompt-tokens", "1,-3"], ["-3", "vocabulary"])
    expect("prompt longer than the context", [good, "--device", "cpu", "--prompt-tokens", ",".join(["5"] * 17)],
           ["17", "context of 16"])
    expect("text prompt longer than the context", [good, "--device", "cpu", "-p", "a" * 40], ["context of 16"])
    expect("no chat template", [good, "--device", "cpu", "--chat", "-p", "hi"], ["chat template"])
    expect("negative temperature", [good, "--device", "cpu", "-p", "hi", "--temp", "-1"], ["temperature"])
    expect("top-p of 0", [good, "--device", "cpu", "-p", "hi", "--top-p", "0"], ["top_p"])
    expect("text and ids", [good, "-p", "hi", "--prompt-tokens", "1"], ["not both"])
    unknown_pre = work / "bad_pre_tokenizer.gguf"
    rewrite(good, unknown_pre, set_key=("tokenizer.ggml.model", gw.ValueType.STRING, "gpt2"),
            set_key2=("tokenizer.ggml.pre", gw.ValueType.STRING, "no-such-pre"))
    expect("unknown pre-tokenizer", [unknown_pre, "--device", "cpu", "-p", "hi"], ["no-such-pre", "llama-bpe"])
    # Invalid UTF-8 in a prompt is text like any other: its bytes become byte tokens.
    done = subprocess.run([a.rayo_llama, good, "--device", "cpu", "-p", b"caf\xc3(\xff", "-n", "2"],
                          capture_output=True)
    ok = done.returncode == 0 and done.stdout.startswith(b"caf\xc3(\xff")
    print(f"{'ok' if ok else 'FAILED'} invalid UTF-8 in a prompt: exit {done.returncode}")
    failures += not ok
    expect("not a token id", [good, "--device", "cpu", "--prompt-tokens", "1,x"], ["'x'", "token id"])
    expect("unknown activation rounding", [good, "--device", "cpu", "--prompt-tokens", "1", "--activations", "q4"],
           ["--activations", "'q4'"])
    expect("no prompt", [good, "--device", "cpu"], ["no prompt"])
    expect("not a GGUF file", [HERE / "README.md", "--prompt-tokens", "1"], ["GGUF"])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
