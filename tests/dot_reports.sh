#!/usr/bin/env bash
# Every DOT report renders with Graphviz: the goldens, and fresh reports of
# every model (including inserted transfers and auto-partitioned graphs).
# Usage: dot_reports.sh PPCC_BINARY SOURCE_DIR
set -euo pipefail
ppcc=$1
src=$2
command -v dot >/dev/null || { echo "dot_reports: Graphviz 'dot' is missing (tools/setup.sh installs it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for f in "$src"/testdata/golden/*.dot; do
  dot -Tsvg "$f" -o /dev/null || { echo "dot_reports: $f does not render" >&2; exit 1; }
  n=$((n + 1))
done
"$ppcc" report "$src/testdata/auto/auto_ffn.json" --pp 2 --tp 2 --format=dot > "$tmp/auto.dot"
dot -Tsvg "$tmp/auto.dot" -o /dev/null || { echo "dot_reports: auto-partitioned report does not render" >&2; exit 1; }
echo "dot_reports: $((n + 1)) DOT reports render"
