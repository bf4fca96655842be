#!/bin/sh
# Build Samsa twice (plain with -Werror, and with ASan+UBSan) and run every test
# in both: unit tests (check) and compat-tests (librdkafka against the real binary).
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
autoreconf -fi
status=0
run() { # run NAME CONFIGURE-ARGS...
	name=$1; shift
	rm -rf "build/$name"; mkdir -p "build/$name"
	( cd "build/$name" && ../../configure "$@" && make -j"$(nproc)" && make -j"$(nproc)" check ) || {
		status=1
		find "build/$name" -name test-suite.log -exec sh -c 'echo "== $1"; cat "$1"' _ {} \;
	}
}
run plain --enable-werror CFLAGS="-O2 -g"
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# a leak inside libzookeeper-mt, not ours (the file says which)
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp"
# The cluster tests' shorter loops under the sanitizers: the same faults,
# fewer rounds (the plain build runs them all).
export SAMSA_CLUSTER_QUICK=1
run sanitize --enable-sanitizers --enable-werror CFLAGS="-O1 -g"
# libFuzzer targets (fuzz/) under ASan+UBSan, 30 s each; each leaves a .trs
# with its result, counted below.
rm -rf build/fuzz; mkdir -p build/fuzz
( cd build/fuzz && CC=clang ../../configure --enable-fuzz --enable-sanitizers CFLAGS="-O1 -g" &&
  make -j"$(nproc)" && make fuzz FUZZ_SECONDS=30 ) || status=1
# One closing line over both builds, from automake's per-test .trs files.
pass=$(find build/plain build/sanitize -name '*.trs' -exec grep -h '^:test-result: PASS' {} + | wc -l)
fail=$(find build/plain build/sanitize -name '*.trs' -exec grep -h -E '^:test-result: (FAIL|ERROR|XPASS)' {} + | wc -l)
skip=$(find build/plain build/sanitize -name '*.trs' -exec grep -h '^:test-result: SKIP' {} + | wc -l)
pass=$((pass + $(find build/fuzz -name '*.trs' -exec grep -h '^:test-result: PASS' {} + | wc -l)))
fail=$((fail + $(find build/fuzz -name '*.trs' -exec grep -h '^:test-result: FAIL' {} + | wc -l)))
echo "tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] || status=1
exit $status
