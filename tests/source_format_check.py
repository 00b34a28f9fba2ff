#!/usr/bin/env python3
"""The source tree's format: C++ as .clang-format says (clang-format 14, the version its output is
pinned to: Debian 12's), and no line of code, shader, CMake, Python or script longer than 120
characters. Prints each offending file and line; exits 1 if any, 77 (skipped) where
clang-format 14 is missing, after checking the lengths.

    source_format_check.py SOURCE_DIR [CLANG_FORMAT]
"""
import re
import subprocess
import sys
from pathlib import Path

LIMIT = 120
FOLDERS = ["bench", "cmake", "examples", "include", "scripts", "shaders", "src", "tests", "tools"]
SUFFIXES = {".cpp", ".hpp", ".comp", ".glsl", ".cmake", ".py", ".sh"}
CPP = {".cpp", ".hpp"}


def sources(root: Path):
    files = [root / "CMakeLists.txt"]
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            script = folder == "scripts" and path.suffix == ""
            if path.suffix in SUFFIXES or path.name == "CMakeLists.txt" or script:
                files.append(path)
    return files


def main() -> int:
    root = Path(sys.argv[1])
    clang_format = sys.argv[2] if len(sys.argv) > 2 else "clang-format"
    files = sources(root)
    problems = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
            if len(line) > LIMIT:
                problems.append(f"{path.relative_to(root)}:{number}: {len(line)} characters (at most {LIMIT})")
    cpp = [str(p) for p in files if p.suffix in CPP]
    try:
        version = subprocess.run([clang_format, "--version"], capture_output=True, text=True).stdout
    except OSError:
        version = ""
    pinned = re.search(r"version 14\.", version) is not None
    if pinned:
        done = subprocess.run([clang_format, "--dry-run", "--Werror", f"--style=file:{root / '.clang-format'}"] + cpp,
                              capture_output=True, text=True)
        formatted = set(re.findall(r"^(\S+?):\d+:\d+: error", done.stderr, re.MULTILINE))
        problems += [f"{Path(f).relative_to(root)}: not as clang-format writes it (clang-format -i FILE)"
                     for f in sorted(formatted)]
        if done.returncode != 0 and not formatted:
            problems.append("clang-format failed: " + done.stderr.strip())
    for problem in problems:
        print(problem)
    print(f"{len(files)} files, {len(cpp)} of them C++: {len(problems)} problems")
    if problems:
        return 1
    if not pinned:
        print(f"skipped the C++ format: {clang_format} is not clang-format 14 ({version.strip() or 'not found'})")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
