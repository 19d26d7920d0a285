#!/usr/bin/env bash
# `make lint`: the layers of the tree hold. calib/ stands below shim/; cli/ stands beside
# shim/ and uses only calib/ and include/; inside shim/, a file takes only from files on
# lower floors of shim/LAYERS (lines "N file file ...", '#' comments), and a .c may
# include its own .h.
#
# What a file takes: the headers gcc -MM lists for it (everything it includes, through
# other headers too: a header's floor counts for every file that includes it) and, for a
# .c, the symbols its object in BUILD leaves undefined (nm) that another shim object
# defines. Files LAYERS names that do not exist yet, and objects without a source, are
# passed over. Prints one line per violation, naming the file, what it takes and from
# where; exit status 0 when there is none, 1 otherwise, 2 when it cannot check (LAYERS
# unreadable, nothing from gcc).
#
# usage: test/check-layers.sh [BUILD]   (default: build, as the Makefile's B)
set -u
export LC_ALL=C
cd "$(dirname "$0")/.." || exit 2
build=${1:-build}
layers=shim/LAYERS
[ -r "$layers" ] || { echo "check-layers: $layers: cannot be read" >&2; exit 2; }

# As the compiler sees the tree, with shim/ and cli/ reachable from anywhere so that an
# include of one of their headers is found (and named) wherever it stands.
include_flags=(-Icalib -Iinclude -Ishim -Icli)

declare -A floor_of
while read -r floor files; do
	[[ $floor =~ ^[0-9]+$ ]] || { echo "check-layers: $layers: '$floor $files': expected N FILE..." >&2; exit 2; }
	for f in $files; do
		floor_of[$f]=$floor
	done
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$layers")

violations=0
violation() {
	echo "$*"
	violations=$((violations + 1))
}

# What every file of shim/, calib/ and cli/ (its wings too: cli/ab/, ...) includes,
# directly or through other headers, as "file header" lines, from one run of gcc (names it
# could not resolve stay bare and are passed over: `make` reports those). Each rule's first
# prerequisite is its file.
includes=$(mktemp)
shim_symbols=$(mktemp)
trap 'rm -f "$includes" "$shim_symbols"' EXIT
sources=(shim/*.[ch] calib/*.[ch] cli/*.[ch] cli/*/*.[ch])
gcc -MM -MG "${include_flags[@]}" -x c "${sources[@]}" 2>/dev/null | awk '
	# "cli/../shim/a.h" is shim/a.h.
	function normal(path,   n, part, k, i, out) {
		n = split(path, part, "/")
		k = 0
		for (i = 1; i <= n; i++)
			if (part[i] == ".." && k > 0 && kept[k] != "..") k--
			else if (part[i] != "." && part[i] != "") kept[++k] = part[i]
		out = path ~ /^\// ? "/" : ""
		for (i = 1; i <= k; i++) out = out (i > 1 ? "/" : "") kept[i]
		return out
	}
	/^[^ \t]/ { sub(/^[^:]*:/, ""); file = "" } # a rule: its target, then its file
	{
		sub(/\\$/, "")
		for (i = 1; i <= NF; i++)
			if (file == "") file = $i
			else if (normal($i) != file) print file, normal($i)
	}' | sort -u >"$includes"
[ -s "$includes" ] || { echo "check-layers: gcc -MM listed no includes" >&2; exit 2; }

# Objects in BUILD/DIR and its folders (cli/ab/, ...) with a source in DIR, and that source:
# "object source" lines.
objects() { # DIR
	for object in "$build/$1"/*.o "$build/$1"/*/*.o; do
		local source=${object#"$build/"}
		source=${source%.o}.c
		[ -e "$object" ] && [ -e "$source" ] && echo "$object $source"
	done
}

# The global symbols the objects define, or leave undefined (nm -u), as "symbol source"
# lines sorted by symbol. nm -A names the object before each symbol.
symbols() { # nm-option OBJECTS
	local option=$1 pairs
	shift
	pairs=$(objects "$@")
	[ -n "$pairs" ] || return 0
	# shellcheck disable=SC2046 # one word per object
	nm -A -g $option $(cut -d' ' -f1 <<<"$pairs") 2>/dev/null |
		awk -v pairs="$pairs" '
		BEGIN { n = split(pairs, p, "[ \n]"); for (i = 1; i < n; i += 2) source[p[i]] = p[i + 1] }
		{ object = $1; sub(/:.*/, "", object); print $NF, source[object] }' | sort -u
}

# ---- includes ----

# A .c may include its own .h: shim/clock.c, shim/clock.h.
own_header() { [[ $1 == *.c ]] && [ "$2" = "${1%.c}.h" ]; }

for file in shim/*.c shim/*.h; do
	[ -e "$file" ] && [ -z "${floor_of[$file]:-}" ] && violation "$file: on no floor of $layers"
done

while read -r file header; do
	case $file:$header in
	shim/*:shim/*)
		floor=${floor_of[$file]:-}
		taken=${floor_of[$header]:-}
		[ -n "$floor" ] || continue # said above
		own_header "$file" "$header" && continue
		if [ -z "$taken" ]; then
			[ -e "$header" ] && violation "$file (floor $floor) includes $header, which is on no floor of $layers"
		elif [ "$taken" -ge "$floor" ]; then
			violation "$file (floor $floor) includes $header (floor $taken)"
		fi
		;;
	shim/*:cli/*) violation "$file includes $header: shim/ and cli/ stand beside each other" ;;
	calib/*:shim/* | calib/*:cli/*) violation "$file includes $header: calib/ stands below shim/ and cli/" ;;
	cli/*:shim/*) violation "$file includes $header: cli/ uses only calib/ and include/" ;;
	esac
done <"$includes"

# ---- symbols ----

# Every symbol a shim object defines, as "symbol source" lines.
symbols --defined-only shim >"$shim_symbols"

# A shim object takes only from objects on lower floors.
while read -r symbol file source; do
	[ "$source" = "$file" ] && continue
	floor=${floor_of[$file]:-}
	taken=${floor_of[$source]:-}
	[ -n "$floor" ] && [ -n "$taken" ] || continue # said above
	[ "$taken" -ge "$floor" ] && violation "$file (floor $floor) takes $symbol from $source (floor $taken)"
done < <(symbols -u shim | join - "$shim_symbols" | sort -k2,2 -k1,1)

# The command takes nothing from the shim. The functions the shim interposes are libc's
# too: the command calls libc's.
libc_symbols=$(nm -D --defined-only "$(gcc -print-file-name=libc.so.6)" 2>/dev/null |
	awk '{ sub(/@.*/, "", $NF); print $NF }' | sort -u)
while read -r symbol file source; do
	grep -q -x -F "$symbol" <<<"$libc_symbols" && continue
	violation "$file takes $symbol from $source: cli/ uses only calib/ and include/"
done < <(symbols -u cli | join - "$shim_symbols" | sort -k2,2 -k1,1)

[ "$violations" -eq 0 ]
