# Sourced by scripts/demo, scripts/test and scripts/docs: pick the active venv, or create and use
# .venv, and define `pip_install NAME PIP-ARGS...`. Needs only Python 3.10+ on PATH.
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

# What this checkout's requirements are: pyproject.toml's hash and where the checkout is (an
# editable install points here). An install step whose stamp in the venv matches is skipped, so
# a rerun spends no time in pip; ARROWMIX_REINSTALL=1 runs every step again.
{ read -r VENV_DIR; read -r CHECKOUT_KEY; } < <("$PY" - <<'EOF'
import hashlib, os, sys
digest = hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest()[:16]
print(sys.prefix)
print(f"{digest}:{os.getcwd()}")
EOF
)
STAMPS="$VENV_DIR/.arrowmix-installed"
PIP_READY=0

# pip_install NAME ARGS...: `pip install -q ARGS`, unless step NAME already ran in this venv with
# the same ARGS for this checkout's pyproject.toml.
pip_install() {
    local name="$1"
    shift
    local key="$CHECKOUT_KEY $*"
    if [ "${ARROWMIX_REINSTALL:-0}" != 1 ] && [ -f "$STAMPS/$name" ] &&
        [ "$(cat "$STAMPS/$name")" = "$key" ]; then
        return 0
    fi
    if [ "$PIP_READY" = 0 ]; then
        # pip >= 25.1 understands PEP 735 dependency groups (--group).
        "$PY" -m pip install -q --disable-pip-version-check --upgrade "pip>=25.1"
        PIP_READY=1
    fi
    "$PY" -m pip install -q --disable-pip-version-check "$@"
    mkdir -p "$STAMPS"
    printf '%s\n' "$key" >"$STAMPS/$name"
}
