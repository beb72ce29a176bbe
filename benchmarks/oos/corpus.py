"""The out-of-sample corpora: where their files live, their locks, their pages.

Two documentation sets from Debian packages that nothing in the project was
tuned on. The corpora are not committed: `scripts/install_corpora.sh`
installs the pinned packages and `corpus.lock` pins every file by SHA-256.

A corpus is the files under `root` inside the `trees` listed here (all of
them when `trees` is empty), with the suffix `.html`. `source` is the path
relative to `root`, exactly as `docindex ingest` stores it when given those
trees (the common parent of the trees is `root`).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

OOS = Path(__file__).resolve().parent
REPO = OOS.parents[1]


@dataclass(frozen=True)
class Corpus:
    name: str                 # directory under benchmarks/oos/, collection name, var/oos/<name>.db
    package: str              # the Debian package that ships the files
    version: str              # its pinned version
    root: Path                # sources are relative to this
    trees: tuple[str, ...]    # sub-trees of root that make the corpus; () = all of root

    @property
    def dir(self) -> Path:
        return OOS / self.name

    @property
    def db(self) -> Path:
        return REPO / "var" / "oos" / f"{self.name}.db"

    def ingest_paths(self) -> list[Path]:
        return [self.root / t for t in self.trees] if self.trees else [self.root]

    def files(self) -> list[str]:
        """Sources of the corpus on this machine, sorted."""
        found: list[str] = []
        for top in self.ingest_paths():
            found.extend(p.relative_to(self.root).as_posix() for p in top.rglob("*.html")
                         if p.is_file() and not any(part.startswith(".") for part in p.relative_to(self.root).parts))
        return sorted(found)


CORPORA: dict[str, Corpus] = {
    # The whole PostgreSQL 15 manual: 1,167 HTML pages, 11,900 chunks.
    "postgresql": Corpus("postgresql", "postgresql-doc-15", "15.18-0+deb12u1",
                         Path("/usr/share/doc/postgresql-doc-15/html"), ()),
    # Python 3.11's user-facing documentation: library reference, tutorial, HOWTOs,
    # FAQ, language reference and "using Python" (381 pages, 15,020 chunks). Left
    # out: c-api, extending, distutils, whatsnew (release notes), the top-level
    # index pages and the _sources/ reST copies (the same text again as .txt).
    "python": Corpus("python", "python3.11-doc", "3.11.2-6+deb12u8",
                     Path("/usr/share/doc/python3.11-doc/html"),
                     ("faq", "howto", "library", "reference", "tutorial", "using")),
}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_lock(corpus: Corpus) -> dict:
    return {
        "corpus": corpus.name,
        "package": corpus.package,
        "version": corpus.version,
        "root": str(corpus.root),
        "trees": list(corpus.trees),
        "files": {source: sha256_file(corpus.root / source) for source in corpus.files()},
    }


def read_lock(corpus: Corpus) -> dict:
    return json.loads((corpus.dir / "corpus.lock").read_text())


def verify(corpus: Corpus) -> list[str]:
    """Problems with the installed files against the lock ([] when they match)."""
    lock = read_lock(corpus)
    if not corpus.root.is_dir():
        return [f"{corpus.root}: missing (run scripts/install_corpora.sh)"]
    problems = []
    present = set(corpus.files())
    for source, sha in lock["files"].items():
        if source not in present:
            problems.append(f"{source}: missing")
        elif sha256_file(corpus.root / source) != sha:
            problems.append(f"{source}: sha256 differs from the lock")
    problems.extend(f"{source}: not in the lock" for source in sorted(present - set(lock["files"])))
    return problems


if __name__ == "__main__":   # python -m benchmarks.oos.corpus lock|verify NAME…
    import sys

    command, names = sys.argv[1], sys.argv[2:] or list(CORPORA)
    failed = False
    for name in names:
        corpus = CORPORA[name]
        if command == "lock":
            lock = build_lock(corpus)
            (corpus.dir).mkdir(parents=True, exist_ok=True)
            (corpus.dir / "corpus.lock").write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
            print(f"{name}: {len(lock['files'])} files locked")
        elif command == "verify":
            problems = verify(corpus)
            for problem in problems[:20]:
                print(f"{name}: {problem}", file=sys.stderr)
            print(f"{name}: {'ok' if not problems else f'{len(problems)} problems'}")
            failed |= bool(problems)
        else:
            sys.exit(f"unknown command {command!r}: use lock or verify")
    sys.exit(1 if failed else 0)
