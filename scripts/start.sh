#!/bin/sh
# Build Samsa (release build under build/release) and start one broker on
# 127.0.0.1:9092 with its data under ./data, in the foreground (Ctrl-C stops it cleanly).
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
[ -x configure ] || autoreconf -fi
mkdir -p build/release
cd build/release
[ -f Makefile ] || ../../configure --disable-tests CFLAGS="-O2 -g"
make -j"$(nproc)" -C protocol && make -j"$(nproc)" -C storage && make -j"$(nproc)" -C controller && make -j"$(nproc)" -C broker
cd ../..
exec build/release/broker/samsa config/server.properties "$@"
