#!/usr/bin/env python3
"""The library's layers: src/core is the ground floor and includes no backend (src/cpu, src/cuda,
src/vulkan), no dispatcher (src/dispatch), no file format (src/gguf), no model code (src/llm) and
no kernel generator (src/ptx, src/quant); public headers (rayo/...) and its own files only. Prints
each offending include; exits 1 if any.

    layering_check.py SOURCE_DIR
"""
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ALLOWED = ("core/", "rayo/")


def main() -> int:
    root = Path(sys.argv[1])
    problems = []
    for path in sorted((root / "src" / "core").rglob("*")):
        if path.suffix not in {".cpp", ".hpp"}:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            match = INCLUDE.match(line)
            if match and not match.group(1).startswith(ALLOWED):
                problems.append(f"{path.relative_to(root)}:{number}: includes {match.group(1)}")
    for problem in problems:
        print(problem)
    print(f"src/core: {len(problems)} includes from outside the core")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
