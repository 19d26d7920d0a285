#!/usr/bin/env bash
# Splices `tscshim options --man` (the TSCSHIM_* table of calib/options.c) into each man
# page between the lines `.\" options:begin` and `.\" options:end`.
#   man/splice-options.sh TSCSHIM PAGE...          rewrites the pages
#   man/splice-options.sh --check TSCSHIM PAGE...  prints the differences, exit 1 if any
set -euo pipefail
check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi
tscshim="$1"
shift
table=$(mktemp)
spliced=$(mktemp)
trap 'rm -f "$table" "$spliced"' EXIT
"$tscshim" options --man >"$table"
status=0
for page in "$@"; do
	grep -q '^\.\\" options:begin$' "$page" && grep -q '^\.\\" options:end$' "$page" || {
		echo "$page: no options:begin/options:end markers" >&2
		exit 2
	}
	awk -v table="$table" '
		/^\.\\" options:end$/ { skipping = 0 }
		!skipping { print }
		/^\.\\" options:begin$/ { while ((getline line < table) > 0) print line; skipping = 1 }
	' "$page" >"$spliced"
	if [ "$check" = 1 ]; then
		diff -u "$page" "$spliced" || status=1
	elif ! cmp -s "$page" "$spliced"; then
		cp "$spliced" "$page"
		echo "updated $page"
	fi
done
exit "$status"
