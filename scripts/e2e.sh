#!/usr/bin/env bash
# End-to-end check: two API instances on one Redis and one fresh Postgres
# database, driven by loadgen across both. A safe strategy must come out
# clean (exit 0) and the unsafe demo strategy must be caught (exit 1).
#
# Needs: TEST_REDIS_URL (or REDIS_URL) and TEST_DATABASE_URL (or DATABASE_URL)
# pointing at running servers; .ci/run sets them.
set -euo pipefail
cd "$(dirname "$0")/.."

redis_url=${TEST_REDIS_URL:-${REDIS_URL:?set TEST_REDIS_URL}}
base_url=${TEST_DATABASE_URL:-${DATABASE_URL:?set TEST_DATABASE_URL}}

work=$(mktemp -d)
db="seatlock_e2e_$$"
pids=()     # API instances: SIGTERM, so that they drain and release
servers=()  # Redis and ZooKeeper servers of this run
cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	for pid in "${servers[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
	for pid in "${servers[@]}"; do wait "$pid" 2>/dev/null || true; done
	psql "$base_url" -qc "drop database if exists $db with (force)" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

# free_port prints a TCP port of 127.0.0.1 that nothing listens on.
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

# Three independent Redis servers for the redlock strategy.
redlock_urls=()
for _ in 1 2 3; do
	port=$(free_port)
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no >"$work/redis-$port.log" 2>&1 &
	servers+=($!)
	redlock_urls+=("redis://127.0.0.1:$port/0")
done
for u in "${redlock_urls[@]}"; do
	port=${u##*:}; port=${port%/*}
	for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
done

# A ZooKeeper server for the zookeeper strategy, from Debian's package.
zk_servers=""
if [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null; then
	zk_port=$(free_port)
	mkdir -p "$work/zk"
	printf 'tickTime=500\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n' \
		"$work/zk/data" "$zk_port" >"$work/zk/zoo.cfg"
	java -Xmx256m -XX:+UseSerialGC -cp /usr/share/java/zookeeper.jar org.apache.zookeeper.server.ZooKeeperServerMain \
		"$work/zk/zoo.cfg" >"$work/zk/server.log" 2>&1 &
	servers+=($!)
	for _ in $(seq 100); do
		[ "$(exec 3<>"/dev/tcp/127.0.0.1/$zk_port" && printf ruok >&3 && timeout 1 cat <&3)" = imok ] 2>/dev/null && break
		sleep 0.2
	done
	zk_servers="127.0.0.1:$zk_port"
else
	echo "no ZooKeeper installed (apt-get install zookeeper): the zookeeper strategy is left out"
fi

go build -o "$work/api" ./cmd/api
go build -o "$work/loadgen" ./cmd/loadgen
psql "$base_url" -qc "create database $db" >/dev/null
db_url=$(sed -E "s#/[^/?]+(\?|$)#/$db\1#" <<<"$base_url")

targets=()
for i in 1 2; do
	log="$work/api$i.log"
	ADDR=127.0.0.1:0 DATABASE_URL="$db_url" REDIS_URL="$redis_url" DEMO_MODE=true LOCK_TTL=4s \
		REDLOCK_URLS="$(IFS=,; echo "${redlock_urls[*]}")" ZOOKEEPER_SERVERS="$zk_servers" LOCK_DIR="$work/locks" \
		"$work/api" >"$log" 2>&1 &
	pids+=($!)
	addr=""
	for _ in $(seq 200); do
		addr=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -n 1 | sed 's/listening on //') || true
		[ -n "$addr" ] && curl -fsS "$addr/healthz" >/dev/null 2>&1 && break
		addr=""
		sleep 0.1
	done
	[ -n "$addr" ] || { echo "instance $i did not start:"; cat "$log"; exit 1; }
	targets+=("$addr")
done
all=$(IFS=,; echo "${targets[*]}")
echo "instances: $all"

echo "-- safe: keyed+redis, hot seats, both instances"
"$work/loadgen" -targets "$all" -scenario hot -seats 4 -clients 32 -requests 800 -payment-delay 5ms

echo "-- safe: spread, both instances"
"$work/loadgen" -targets "$all" -scenario spread -clients 32 -requests 1000

echo "-- unsafe: lock=none guard=off must be caught double-booking"
set +e
"$work/loadgen" -targets "$all" -scenario hot -seats 1 -clients 16 -requests 200 -lock none -guard off -payment-delay 20ms
status=$?
set -e
if [ "$status" -ne 1 ]; then
	echo "loadgen exited $status for an unsafe run; want 1 (double booking detected)" >&2
	exit 1
fi
echo "e2e: unsafe run detected as expected"

echo "-- compare across both instances: every strategy, every backend"
"$work/loadgen" compare -targets "$all" -scenario hot -seats 2 -clients 16 -requests 200 -payment-delay 10ms -json >"$work/compare.json" || {
	echo "compare found a safe strategy double-booking or losing a booking:" >&2
	cat "$work/compare.json" >&2
	exit 1
}
# Every backend configured above must have taken part, not been refused.
for s in postgres redlock file ${zk_servers:+zookeeper}; do
	grep -A6 "\"strategy\": \"$s\"" "$work/compare.json" | grep -q '"refused"' && {
		echo "compare: strategy $s was refused by the servers" >&2
		grep -A6 "\"strategy\": \"$s\"" "$work/compare.json" >&2
		exit 1
	}
done
"$work/loadgen" compare -targets "$all" -scenario hot -seats 2 -clients 16 -requests 200 -payment-delay 10ms
echo "e2e passed"
