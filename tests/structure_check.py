#!/usr/bin/env python3
"""The library's structure, as CONTRIBUTING.md states it:

* layering: src/core is the ground floor and includes no backend (src/cpu, src/cuda, src/vulkan), no
  dispatcher (src/dispatch), no file format (src/gguf), no model code (src/llm) and no kernel
  generator (src/ptx, src/quant): public headers (rayo/...) and its own files only;
* function length: no function in src/ (free, member, defined in or out of its class; lambdas count
  towards the function that holds them) is longer than 150 lines.

Prints each offence; exits 1 if any.

    structure_check.py SOURCE_DIR
"""
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
CORE_MAY_INCLUDE = ("core/", "rayo/")
MAX_FUNCTION_LINES = 150
# A definition starts at namespace or class level (indented at most 4 spaces) with a name and its
# parameter list; control statements and declarations are not definitions.
START = re.compile(r"^ {0,4}(?!(?:if|for|while|switch|return|else|do|namespace|struct|class|enum|union|extern|case|"
                   r"using|typedef|template|static_assert)\b)[A-Za-z_~][\w:<>,*&~ ]*\(")
SIGNATURE_END = re.compile(r"\)\s*(?:const)?\s*(?:noexcept)?\s*(?:override|final)?\s*(?:->\s*[\w:<>,* ]+)?"
                           r"(?:\s*:.*)?\{\s*$")


def code_of(line: str) -> str:
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(?:\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def layering(root: Path):
    for path in sorted((root / "src" / "core").rglob("*")):
        if path.suffix not in {".cpp", ".hpp"}:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            match = INCLUDE.match(line)
            if match and not match.group(1).startswith(CORE_MAY_INCLUDE):
                yield f"{path.relative_to(root)}:{number}: src/core includes {match.group(1)}"


def functions(lines):
    """(first line index, line count) of each function definition."""
    i = 0
    while i < len(lines):
        if not START.match(lines[i]) or "=" in code_of(lines[i]).split("(")[0]:
            i += 1
            continue
        end = i  # the signature may run over a few lines
        while end < len(lines) and end < i + 8 and ";" not in code_of(lines[end]) and not SIGNATURE_END.search(
                code_of(lines[end])):
            end += 1
        if end >= len(lines) or end == i + 8 or ";" in code_of(lines[end]):
            i += 1
            continue
        depth = 0
        j = end
        while j < len(lines):
            code = code_of(lines[j])
            depth += code.count("{") - code.count("}")
            if depth <= 0:
                break
            j += 1
        yield i, j - i + 1
        i = j + 1


def function_lengths(root: Path):
    for path in sorted((root / "src").rglob("*")):
        if path.suffix not in {".cpp", ".hpp"}:
            continue
        lines = path.read_text(encoding="utf-8").split("\n")
        for first, count in functions(lines):
            if count > MAX_FUNCTION_LINES:
                yield (f"{path.relative_to(root)}:{first + 1}: a function of {count} lines (at most "
                       f"{MAX_FUNCTION_LINES}): {lines[first].strip()[:60]}")


def main() -> int:
    root = Path(sys.argv[1])
    problems = list(layering(root)) + list(function_lengths(root))
    for problem in problems:
        print(problem)
    print(f"source structure: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
