#!/bin/sh
# run.sh - run the speed and size benchmark (bench/loadgen.c, scenarios H1-H4
# of issue 6): samsa against librdkafka's mock cluster, one table. Used by
# `make bench`, and the same way by `make bench-cleaner` (cleanbench) and
# `make bench-cluster` (clusterbench).
#
# Usage: run.sh LOADGEN [loadgen args...]
# Environment: SAMSA_BIN (the broker binary), BENCH_ARGS (loadgen args when
# none are given; default: every scenario at full size; e.g.
# BENCH_ARGS="-x 0.1 -H 1,3" for a quick run of H1 and H3 at a tenth).
# The machine's load average is printed before and after: the figures are
# only comparable between quiet runs.
set -eu

loadgen=${1:?usage: run.sh LOADGEN [args...]}
shift
if [ $# -eq 0 ] && [ -n "${BENCH_ARGS:-}" ]; then
	# shellcheck disable=SC2086
	set -- $BENCH_ARGS
fi

: "${SAMSA_BIN:?SAMSA_BIN must name the broker binary}"
if [ ! -x "$SAMSA_BIN" ]; then
	echo "run.sh: broker binary $SAMSA_BIN not found; run make first" >&2
	exit 1
fi
export SAMSA_BIN

echo "bench: $(uname -srm), $(nproc 2>/dev/null || echo '?') cores; $(basename "$loadgen") $*"
echo "bench: before: $(uptime)"
rc=0
"$loadgen" "$@" || rc=$?
echo "bench: after: $(uptime)"
exit $rc
