#!/bin/sh
# run.sh - run the produce/consume benchmark (bench/loadgen.c): samsa
# against librdkafka's mock cluster, one table. Used by `make bench`.
#
# Usage: run.sh LOADGEN [loadgen args...]
# Environment: SAMSA_BIN (the broker binary), BENCH_ARGS (loadgen args when
# none are given, default "-n 1000000"; e.g. BENCH_ARGS="-n 100000" for a
# quick run).
set -eu

loadgen=${1:?usage: run.sh LOADGEN [args...]}
shift
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2086
	set -- ${BENCH_ARGS:--n 1000000}
fi

: "${SAMSA_BIN:?SAMSA_BIN must name the broker binary}"
if [ ! -x "$SAMSA_BIN" ]; then
	echo "run.sh: broker binary $SAMSA_BIN not found; run make first" >&2
	exit 1
fi
export SAMSA_BIN

echo "bench: $(uname -srm), $(nproc 2>/dev/null || echo '?') cores"
exec "$loadgen" "$@"
