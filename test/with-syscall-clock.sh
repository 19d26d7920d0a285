#!/bin/sh
# Runs "$@" as on a host whose kernel clock is a system call (Xen, HPET, acpi_pm): the
# reference-clock double (build/test/librefclock.so, TSCTEST_SYSCALL=1) is loaded AFTER
# whatever LD_PRELOAD already holds, so under `tscshim ab` the B side's shim comes first
# and its re-synchronizations read the double, as they would read the kernel there:
#   tscshim ab -n 6 -- test/with-syscall-clock.sh python3 -c '...'
here=$(cd "$(dirname "$0")/.." && pwd)
export TSCTEST_SYSCALL=1
export LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$here/build/test/librefclock.so"
exec "$@"
