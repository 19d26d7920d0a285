#!/usr/bin/env bash
# The served path's shape, from the disassembly of the built library: each entry point
# (clock_gettime, gettimeofday, timespec_get) reads the counter inline, every way it may
# (rdtsc, lfence; rdtsc, rdtscp), and on no path of its own
#   - saves a register (push) or makes a stack frame, but for the one 8-byte alignment
#     before the pass target's call,
#   - loads through the GOT (every address it needs is relative to the instruction
#     pointer: shim/line.h),
#   - calls a function directly (the rare cases are tail jumps out of line; the pass
#     target is one indirect call or jump).
# A later change that adds any of these to the entry points fails here. Speed itself is
# the benchmark's business (tscshim bench), never a test's.
#   test/check-hot-path.sh LIBRARY   exit 0, or 1 with one line per finding
set -u
lib=${1:?usage: check-hot-path.sh LIBRARY}
command -v objdump >/dev/null || { echo "check-hot-path: objdump is missing (apt-get install binutils)"; exit 1; }
[ -f "$lib" ] || { echo "check-hot-path: $lib: no such file"; exit 1; }

# The GOT's address range: a load whose rip-relative target falls in it is a GOT load,
# whatever symbol objdump names beside the address.
read -r got_size got_addr < <(objdump -h "$lib" | awk '$2 == ".got" {print $3, $4}')
got_start=$((16#${got_addr:-0})) got_end=$((16#${got_addr:-0} + 16#${got_size:-0}))
loads_through_got() { # the instructions on stdin
	local target
	while read -r target; do
		(((16#$target) >= got_start && (16#$target) < got_end)) && return 0
	done < <(grep '(%rip)' | sed -n 's/.*# \([0-9a-f][0-9a-f]*\) .*/\1/p')
	return 1
}

status=0
for fn in clock_gettime gettimeofday timespec_get; do
	# The symbol's address, then its instructions (objdump names an alias by either name).
	addr=$(nm -D --defined-only "$lib" | awk -v f="$fn" '$3 == f {print $1}')
	if [ -z "$addr" ]; then
		echo "check-hot-path: $fn: not exported by $lib"
		status=1
		continue
	fi
	body=$(objdump -d --no-show-raw-insn "$lib" | awk -v a="$(printf '%016x' "0x$addr")" '
		$1 == a && /^[0-9a-f]+ <.*>:$/ {on = 1; next}
		on && /^$/ {exit}
		on {print}')
	if [ -z "$body" ]; then
		echo "check-hot-path: $fn: no instructions found at 0x$addr"
		status=1
		continue
	fi
	complain() { echo "check-hot-path: $fn: $1"; status=1; }
	grep -Eq $'\tpush ' <<<"$body" && complain "saves a register (push): a stack frame on the served path"
	loads_through_got <<<"$body" && complain "loads through the GOT"
	grep -E $'\tcall ' <<<"$body" | grep -Evq $'\tcall +\\*%' && complain "calls a function directly"
	[ "$(grep -Ec $'\t(sub|add) +\\$0x[0-9a-f]+,%rsp' <<<"$body")" -le 2 ] ||
		complain "adjusts the stack more than the pass target's call needs"
	grep -Eq $'\tsub +\\$0x([1-9a-f][0-9a-f]+|[0-79a-f]),%rsp' <<<"$body" &&
		complain "makes a stack frame larger than the call's alignment"
	grep -q $'\trdtscp' <<<"$body" || complain "has no inline rdtscp read"
	grep -A1 $'\tlfence' <<<"$body" | grep -q $'\trdtsc$' || complain "has no inline lfence; rdtsc read"
	grep -q $'\trdtsc$' <<<"$body" || complain "has no inline rdtsc read"
done
[ "$status" -eq 0 ] && echo "check-hot-path: clock_gettime, gettimeofday, timespec_get: no push, no GOT load, no direct call, counter read inline"
exit "$status"
