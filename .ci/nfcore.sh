#!/usr/bin/env bash
# Installs nf-core tools, which crates/nextflow's tests run for real, into a cache directory
# outside the repository:
#   ${CODARIS_NFCORE:-$HOME/.cache/codaris-nfcore}
# Pinned, transitive dependencies included, by .ci/nfcore/requirements.txt (a pip freeze of a
# venv with `nf-core==4.2.1`). To move the pin: install the new nf-core into a fresh venv,
# `pip freeze` it into that file.
#
# Idempotent: a run whose pins match the cache's stamp only checks that nf-core is there.
# Needs python3 (with venv) and the PyPI registry; nothing is fetched later. Nextflow is not
# installed (it cannot be here): the tests put tests/fixtures/nextflow/nextflow, a stand-in
# that says it is fake, first on PATH.
#
# Layout (what the tests look for):
#   venv/bin/nf-core
set -euo pipefail

PINS_FILE="$(cd "$(dirname "$0")" && pwd)/nfcore/requirements.txt"
DIR="${CODARIS_NFCORE:-$HOME/.cache/codaris-nfcore}"

present() {
    [[ -x $DIR/venv/bin/nf-core ]]
}

# Whatever changes a pin changes the stamp, and a changed stamp installs again.
PINS="$(sha256sum "$PINS_FILE" | cut -d' ' -f1)"
STAMP="$DIR/installed"

mkdir -p "$DIR"
# One installer at a time (two CI jobs sharing a cache).
exec 9>"$DIR/.lock"
flock 9

if [[ -f $STAMP && "$(cat "$STAMP")" == "$PINS" ]] && present; then
    echo "nf-core: already installed in $DIR"
    exit 0
fi

echo "nf-core: installing into $DIR"
rm -f "$STAMP"
[[ -x $DIR/venv/bin/python ]] || python3 -m venv "$DIR/venv"
"$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$PINS_FILE"

present || {
    echo "nf-core: the install finished but venv/bin/nf-core is missing from $DIR" >&2
    exit 1
}
NFCORE_NO_VERSION_CHECK=1 "$DIR/venv/bin/nf-core" --version >/dev/null
printf '%s' "$PINS" >"$STAMP"
echo "nf-core: installed in $DIR"
