#!/usr/bin/env bash
# Whether clang here builds and links with -fsanitize=KINDS (thread for `make sanitize`'s
# TSan build; fuzzer,address,undefined for `make fuzz`). Exit 0 if it does; else exit 1
# with one line on stdout naming the Debian packages to install.
# usage: test/clang-sanitizer.sh KINDS [CLANG]
set -u
kinds=$1
cc=${2:-clang}
if ! command -v "$cc" >/dev/null; then
	echo "$cc is not installed (apt-get install clang libclang-rt-14-dev, on Debian 12)"
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ ,$kinds, == *,fuzzer,* ]]; then
	echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return d && n > 1 ? 0 : 0; }' >"$tmp/t.c"
else
	echo 'int main(void) { return 0; }' >"$tmp/t.c"
fi
if ! "$cc" -fsanitize="$kinds" "$tmp/t.c" -o "$tmp/t" 2>/dev/null; then
	major=$("$cc" -dumpversion | cut -d. -f1)
	echo "$cc cannot link -fsanitize=$kinds: its runtime is missing (apt-get install libclang-rt-$major-dev)"
	exit 1
fi
