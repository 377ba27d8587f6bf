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
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	psql "$base_url" -qc "drop database if exists $db with (force)" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/api" ./cmd/api
go build -o "$work/loadgen" ./cmd/loadgen
psql "$base_url" -qc "create database $db" >/dev/null
db_url=$(sed -E "s#/[^/?]+(\?|$)#/$db\1#" <<<"$base_url")

targets=()
for i in 1 2; do
	log="$work/api$i.log"
	ADDR=127.0.0.1:0 DATABASE_URL="$db_url" REDIS_URL="$redis_url" DEMO_MODE=true LOCK_TTL=2s \
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

echo "-- compare across both instances"
"$work/loadgen" compare -targets "$all" -scenario hot -seats 2 -clients 16 -requests 200 -payment-delay 10ms
echo "e2e passed"
