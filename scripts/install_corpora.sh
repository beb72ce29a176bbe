#!/usr/bin/env bash
# Install the out-of-sample documentation corpora (benchmarks/oos/) and check
# every file against its lock. Nothing is downloaded at benchmark time: the
# corpora are Debian packages, pinned here, and corpus.lock pins each file used
# by SHA-256 (benchmarks/oos/<name>/corpus.lock).
#
#   postgresql  postgresql-doc-15 15.18-0+deb12u1  /usr/share/doc/postgresql-doc-15/html (whole manual)
#   python      python3.11-doc 3.11.2-6+deb12u8    /usr/share/doc/python3.11-doc/html
#               (faq howto library reference tutorial using)
#
# The packages are installed with apt-get when they are missing or at another
# version and apt is usable (root); otherwise the files already there are only
# verified. Exits non-zero, with one line saying why, when they do not match.
#
#   bash scripts/install_corpora.sh            # install if needed, then verify
#   bash scripts/install_corpora.sh --verify   # verify only
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=("postgresql-doc-15=15.18-0+deb12u1" "python3.11-doc=3.11.2-6+deb12u8")
PY=${PYTHON:-.venv/bin/python}
[[ -x "$PY" ]] || PY=python3

installed_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }

if [[ "${1:-}" != "--verify" ]]; then
  wanted=()
  for pinned in "${PACKAGES[@]}"; do
    name=${pinned%%=*} version=${pinned#*=}
    [[ "$(installed_version "$name")" == "$version" ]] || wanted+=("$pinned")
  done
  if [[ ${#wanted[@]} -gt 0 ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
      echo "install_corpora: apt-get install ${wanted[*]}"
      if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${wanted[@]}" >/dev/null; then
        echo "install_corpora: apt-get could not install ${wanted[*]} (try apt-get update; a pinned version" \
             "no longer in the archive means the locks need a new, reviewed version)" >&2
        exit 1
      fi
    else
      echo "install_corpora: ${wanted[*]} not installed and apt-get is not usable here (needs root);" \
           "install them, then run: bash scripts/install_corpora.sh --verify" >&2
      exit 1
    fi
  fi
fi
"$PY" -m benchmarks.oos.corpus verify
