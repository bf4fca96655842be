#!/bin/sh
# Build Samsa (release build under build/release) and start a local cluster in
# the foreground: one ZooKeeper on 127.0.0.1:2181 and three brokers (ids 1-3) on
# 127.0.0.1:9092, 9093 and 9094, data under ./data/cluster. Ctrl-C (or SIGTERM)
# stops the brokers one by one (each hands its leadership over first), then
# ZooKeeper (the last broker has nobody to hand its leadership to: it asks
# controlled.shutdown.max.retries times, a second apart, then stops). Extra
# arguments go to every broker, e.g. --override num.partitions=6.
set -eu
cd "$(dirname "$0")/.."
./scripts/deps.sh
[ -x configure ] || autoreconf -fi
mkdir -p build/release
(
	cd build/release
	[ -f Makefile ] || ../../configure --disable-tests CFLAGS="-O2 -g"
	make -j"$(nproc)" -C protocol && make -j"$(nproc)" -C storage &&
		make -j"$(nproc)" -C controller && make -j"$(nproc)" -C broker
)

DATA=$PWD/data/cluster
ZKDIR=$DATA/zookeeper
mkdir -p "$ZKDIR/data" "$ZKDIR/conf" "$DATA"
cat >"$ZKDIR/conf/zoo.cfg" <<EOF
tickTime=2000
dataDir=$ZKDIR/data
clientPort=2181
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr
EOF
cat >"$ZKDIR/conf/log4j.properties" <<EOF
log4j.rootLogger=WARN, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$ZKDIR/zookeeper.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p %m%n
EOF

pids=""
stop() {
	trap - INT TERM
	[ -n "${tailpid:-}" ] && kill "$tailpid" 2>/dev/null
	# brokers first, one at a time (controlled shutdown), ZooKeeper last
	for pid in $pids; do
		kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	done
	[ -n "${zkpid:-}" ] && kill -TERM "$zkpid" 2>/dev/null && wait "$zkpid" 2>/dev/null
	[ -n "${tailpid:-}" ] && kill "$tailpid" 2>/dev/null
	exit 0
}
trap stop INT TERM

# Each server in a session of its own: Ctrl-C reaches this script alone,
# which stops them in order.
setsid java -Xmx256m -Dlog4j.configuration="file:$ZKDIR/conf/log4j.properties" \
	-cp "$ZKDIR/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar" \
	org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZKDIR/conf/zoo.cfg" &
zkpid=$!
i=0
until [ "$( { printf ruok | timeout 1 bash -c 'exec 3<>/dev/tcp/127.0.0.1/2181; cat >&3; cat <&3'; } 2>/dev/null)" = imok ]; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "ZooKeeper did not start (see $ZKDIR/zookeeper.log)" >&2; stop; }
	sleep 0.1
done
echo "ZooKeeper started on 127.0.0.1:2181"

for id in 1 2 3; do
	port=$((9091 + id))
	setsid build/release/broker/samsa config/server.properties \
		--override broker.id=$id \
		--override zookeeper.connect=127.0.0.1:2181/samsa \
		--override listeners=PLAINTEXT://127.0.0.1:$port \
		--override log.dirs="$DATA/broker-$id" \
		--override default.replication.factor=3 \
		--override min.insync.replicas=2 \
		--override offsets.topic.replication.factor=3 \
		--override transaction.state.log.replication.factor=3 \
		--override transaction.state.log.min.isr=2 \
		--override controlled.shutdown.retry.backoff.ms=1000 \
		"$@" >"$DATA/broker-$id.log" 2>&1 &
	pids="$pids $!"
done
echo "brokers 1-3 starting on 127.0.0.1:9092,9093,9094; logs in $DATA/broker-*.log"
tail -n +1 -F "$DATA"/broker-1.log "$DATA"/broker-2.log "$DATA"/broker-3.log &
tailpid=$!
wait $pids
kill "$tailpid" 2>/dev/null || true
