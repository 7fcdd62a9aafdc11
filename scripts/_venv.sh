# Sourced by scripts/demo and scripts/test: pick the active venv, or create and use .venv.
# Needs only Python 3.10+ on PATH.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
    PY="$VIRTUAL_ENV/bin/python"
else
    if [ ! -x .venv/bin/python ]; then
        BASE=""
        for cand in python3 python3.13 python3.12 python3.11 python3.10 python; do
            if command -v "$cand" >/dev/null 2>&1 &&
                "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
                BASE="$cand"
                break
            fi
        done
        [ -n "$BASE" ] || { echo "arrowmix needs Python 3.10 or newer on PATH" >&2; exit 1; }
        "$BASE" -m venv .venv
    fi
    PY="$PWD/.venv/bin/python"
fi
# pip >= 25.1 understands PEP 735 dependency groups (--group).
"$PY" -m pip install -q --disable-pip-version-check --upgrade "pip>=25.1"
