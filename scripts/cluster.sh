#!/bin/sh
# Build Samsa (release build under build/release) and start a local cluster in
# the foreground: one ZooKeeper on 127.0.0.1:2181 and three brokers (ids 1-3) on
# 127.0.0.1:9092, 9093 and 9094, data under ./data/cluster. Ctrl-C (or SIGTERM)
# stops the brokers one by one (each hands its leadership over first), then
# ZooKeeper (the last broker has nobody to hand its leadership to: it asks
# controlled.shutdown.max.retries times, a second apart, then stops). Extra
# arguments go to every broker, e.g. --override num.partitions=6.
#
#   ./scripts/cluster.sh broker N [ARGS...]
# starts broker N (1-3) again, in the background, with the same settings,
# while the cluster runs (after a kill -9, say): its output goes on into
# data/cluster/broker-N.log, its pid into data/cluster/broker-N.pid, and
# stopping the cluster stops it too.
set -eu
cd "$(dirname "$0")/.."

DATA=$PWD/data/cluster
ZKDIR=$DATA/zookeeper

# busy PORT: something accepts connections on 127.0.0.1:PORT
busy() {
	timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# start_broker ID [ARGS...]: broker ID in the background, in a session of its
# own (Ctrl-C reaches this script alone, which stops the brokers in order).
start_broker() {
	id=$1
	shift
	port=$((9091 + id))
	if busy "$port"; then
		echo "127.0.0.1:$port is in use: is broker $id running already?" >&2
		return 1
	fi
	setsid build/release/broker/samsa config/server.properties \
		--override broker.id="$id" \
		--override zookeeper.connect=127.0.0.1:2181/samsa \
		--override listeners=PLAINTEXT://127.0.0.1:$port \
		--override log.dirs="$DATA/broker-$id" \
		--override default.replication.factor=3 \
		--override min.insync.replicas=2 \
		--override offsets.topic.replication.factor=3 \
		--override transaction.state.log.replication.factor=3 \
		--override transaction.state.log.min.isr=2 \
		--override controlled.shutdown.retry.backoff.ms=1000 \
		"$@" >>"$DATA/broker-$id.log" 2>&1 &
	echo $! >"$DATA/broker-$id.pid"
}

if [ "${1:-}" = broker ]; then
	case "${2:-}" in
	1 | 2 | 3) ;;
	*)
		echo "usage: $0 broker 1|2|3 [ARGS...]" >&2
		exit 2
		;;
	esac
	if ! busy 2181; then
		echo "no ZooKeeper on 127.0.0.1:2181: start the cluster first ($0)" >&2
		exit 1
	fi
	id=$2
	shift 2
	start_broker "$id" "$@"
	echo "broker $id starting on 127.0.0.1:$((9091 + id)), pid $(cat "$DATA/broker-$id.pid"), log $DATA/broker-$id.log"
	exit 0
fi

./scripts/deps.sh
[ -x configure ] || autoreconf -fi
mkdir -p build/release
(
	cd build/release
	[ -f Makefile ] || ../../configure --disable-tests CFLAGS="-O2 -g"
	make -j"$(nproc)" -C protocol && make -j"$(nproc)" -C storage &&
		make -j"$(nproc)" -C controller && make -j"$(nproc)" -C broker &&
		make -j"$(nproc)" -C tools
)

for port in 2181 9092 9093 9094; do
	if busy "$port"; then
		echo "127.0.0.1:$port is in use (a cluster running already?); nothing started" >&2
		exit 1
	fi
done

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

stop() {
	trap - INT TERM
	[ -n "${tailpid:-}" ] && kill "$tailpid" 2>/dev/null
	# brokers first, one at a time (controlled shutdown), ZooKeeper last; a
	# broker started again with "broker N" is found by its pid file too
	for id in 1 2 3; do
		pid=$(cat "$DATA/broker-$id.pid" 2>/dev/null) || continue
		rm -f "$DATA/broker-$id.pid"
		kill -TERM "$pid" 2>/dev/null || continue
		while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	done
	[ -n "${zkpid:-}" ] && kill -TERM "$zkpid" 2>/dev/null && wait "$zkpid" 2>/dev/null
	exit 0
}
trap stop INT TERM
rm -f "$DATA"/broker-*.pid

setsid java -Xmx256m -Dlog4j.configuration="file:$ZKDIR/conf/log4j.properties" \
	-cp "$ZKDIR/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar" \
	org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZKDIR/conf/zoo.cfg" &
zkpid=$!
i=0
until [ "$( { printf ruok | timeout 1 bash -c 'exec 3<>/dev/tcp/127.0.0.1/2181; cat >&3; cat <&3'; } 2>/dev/null)" = imok ]; do
	i=$((i + 1))
	if ! kill -0 "$zkpid" 2>/dev/null || [ $i -ge 100 ]; then
		echo "ZooKeeper did not start (see $ZKDIR/zookeeper.log)" >&2
		stop
	fi
	sleep 0.1
done
echo "ZooKeeper started on 127.0.0.1:2181"

for id in 1 2 3; do
	start_broker "$id" "$@" || stop
done
echo "brokers 1-3 starting on 127.0.0.1:9092,9093,9094; logs $DATA/broker-N.log, pids $DATA/broker-N.pid"
tail -n 0 -F "$DATA"/broker-1.log "$DATA"/broker-2.log "$DATA"/broker-3.log &
tailpid=$!
# The cluster lives as long as its ZooKeeper: brokers may die and be started
# again ("broker N") meanwhile. Ctrl-C or SIGTERM ends it through stop.
wait "$zkpid" || true
echo "ZooKeeper exited; stopping the brokers" >&2
zkpid=
stop
