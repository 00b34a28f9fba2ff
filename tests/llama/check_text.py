#!/usr/bin/env python3
"""rayo-llama prints the text of the tokens it generates, for both kinds of vocabulary.

    check_text.py RAYO_LLAMA --work DIR

A tiny random model is written twice with a vocabulary whose every token's text is known: a
byte-level BPE one (tokenizer.ggml.model "gpt2", as Llama 3's: Ġ spells a space, Ċ a newline,
Ã© the two bytes of é) and a SentencePiece one ("llama": ▁ a space, <0x0A> a byte). The `text:`
line must be the generated tokens' texts joined, as rayo::gguf::printable shows them (a newline
as \\x0a).
"""

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gguf_writer as gw  # noqa: E402

N_VOCAB = 64


def byte_level(i: int) -> tuple[str, str]:
    """Token i of the gpt2-style vocabulary and its text."""
    newline = i % 4 == 0
    return f"\u0120w{i}\u00c3\u00a9" + ("\u010a" if newline else ""), f" w{i}\u00e9" + ("\n" if newline else "")


def sentencepiece(i: int) -> tuple[str, str]:
    """Token i of the llama-style vocabulary and its text."""
    return ("<0x0A>", "\n") if i % 8 == 0 else (f"\u2581w{i}", f" w{i}")


def printable(text: str) -> str:
    """rayo::gguf::printable for text of printable characters and newlines."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\x0a")


def check(rayo_llama: Path, work: Path, model: str, token) -> bool:
    work.mkdir(parents=True, exist_ok=True)
    vocab = gw.GGUFWriter()
    vocab.add_string("tokenizer.ggml.model", model)
    vocab.add_array("tokenizer.ggml.tokens", gw.ValueType.STRING, [token(i)[0] for i in range(N_VOCAB)])
    if model == "gpt2":
        vocab.add_array("tokenizer.ggml.merges", gw.ValueType.STRING, [])
    else:  # <0x0A> is a byte token (type 6), the others normal (1)
        vocab.add_array("tokenizer.ggml.token_type", gw.ValueType.I32,
                        [6 if token(i)[0].startswith("<0x") else 1 for i in range(N_VOCAB)])
    vocab.write(work / "vocabulary.gguf")
    subprocess.run([sys.executable, HERE / "make_model.py", "--type", "f16", "--out", work, "--no-reference",
                    "--hidden", "32", "--ffn", "64", "--heads", "4", "--kv-heads", "2", "--context", "256",
                    "--vocab-from", work / "vocabulary.gguf"], check=True, capture_output=True)
    done = subprocess.run([rayo_llama, work / "model.gguf", "--device", "cpu", "--prompt-tokens", "1,2,3",
                           "--n-predict", "12", "--temp", "0", "--ignore-eos"],
                          capture_output=True, text=True, encoding="utf-8")
    lines = done.stdout.splitlines()
    generated = next((line for line in lines if line.startswith("generated:")), None)
    text = next((line for line in lines if line.startswith("text: ")), None)
    if done.returncode != 0 or generated is None or text is None:
        print(f"FAILED {model}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        return False
    ids = [int(t) for t in generated.split()[1:]]
    expected = "text: " + printable("".join(token(i)[1] for i in ids))
    ok = text == expected
    print(f"{'ok' if ok else 'FAILED'} {model}: {generated}\n  got      {text!r}\n  expected {expected!r}")
    if model == "gpt2":
        return ok  # its vocabulary has no tokens of single characters to spell a prompt with
    # A text prompt: the prompt, then the generated text, streamed to stdout; the rates on stderr.
    prompt = token(5)[1].strip() + token(7)[1]
    done = subprocess.run([rayo_llama, work / "model.gguf", "--device", "cpu", "-p", prompt, "-n", "6", "--temp", "0",
                           "--ignore-eos"], capture_output=True, text=True, encoding="utf-8")
    streamed = done.returncode == 0 and done.stdout.startswith(prompt) and "decode 5 tokens" in done.stderr
    print(f"{'ok' if streamed else 'FAILED'} {model} -p {prompt!r}: exit {done.returncode}, stdout {done.stdout!r}\n"
          f"{done.stderr}")
    # --chat: a ChatML template; two turns from stdin, each answered on its own line.
    from check_bad_input import rewrite
    chat_model = work / "chat.gguf"
    rewrite(work / "model.gguf", chat_model,
            set_key=("tokenizer.chat_template", gw.ValueType.STRING, "{{ '<|im_start|>' + message['role'] }}"))
    done = subprocess.run([rayo_llama, chat_model, "--device", "cpu", "--chat", "-n", "3", "--temp", "0",
                           "--ignore-eos"], input="w5 w7\nw9\n", capture_output=True, text=True, encoding="utf-8")
    chatted = done.returncode == 0 and len(done.stdout.split("\n")) >= 3 and "decode 4 tokens" in done.stderr
    print(f"{'ok' if chatted else 'FAILED'} {model} --chat, two turns: exit {done.returncode}, stdout {done.stdout!r}\n"
          f"{done.stderr}")
    return ok and streamed and chatted


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rayo_llama", type=Path)
    p.add_argument("--work", required=True, type=Path)
    a = p.parse_args()
    results = [check(a.rayo_llama, a.work / "gpt2", "gpt2", byte_level),
               check(a.rayo_llama, a.work / "llama", "llama", sentencepiece)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
