#!/usr/bin/env bash
# run-labs.sh runs every workshop lab script (docs/workshop/labs/NN.sh),
# each against a fresh stack, and fails if any fails. It builds cmd/api and
# cmd/loadgen once for all of them.
#
# The labs are independent (each has its own directory, databases and
# ports: see lib.sh), so LABS_JOBS of them run at a time (default 2): most
# of a lab's time is spent waiting for a lease, a hold or a payment to run
# out, not computing. Each lab's output is printed whole when it ends.
# LABS_JOBS=1 runs them one after the other, in order.
#
# Needs a Redis and a Postgres: REDIS_URL / DATABASE_URL, or
# TEST_REDIS_URL / TEST_DATABASE_URL as in CI; and curl, jq, psql,
# redis-server and redis-cli. ZooKeeper is optional (lab 7).
set -eu
cd "$(dirname "$0")/../.."

jobs=${LABS_JOBS:-2}
bin=$(mktemp -d "${TMPDIR:-/tmp}/seatlock-labs-bin.XXXXXX")
trap 'rm -rf "$bin"' EXIT
for tool in curl jq psql redis-server redis-cli; do
	command -v "$tool" >/dev/null || { echo "run-labs: $tool is missing" >&2; exit 1; }
done
go build -o "$bin/api" ./cmd/api
go build -o "$bin/loadgen" ./cmd/loadgen
export BIN=$bin LAB_PREBUILT=1

# lab FILE: run one lab with its output in $bin/<name>.log, then print
# the log and the lab's verdict, and leave the verdict in $bin/<name>.ok
# or $bin/<name>.failed.
lab() {
	local name t=$SECONDS
	name=$(basename "$1" .sh)
	if bash "$1" >"$bin/$name.log" 2>&1; then
		echo "passed in $((SECONDS - t))s" >"$bin/$name.ok"
	else
		echo "FAILED after $((SECONDS - t))s" >"$bin/$name.failed"
	fi
	# One lab's output at a time, whole, even when two end together.
	(
		flock 9
		echo "== $1"
		cat "$bin/$name.log"
		echo "== $1 $(cat "$bin/$name".ok "$bin/$name".failed 2>/dev/null)"
	) 9>"$bin/print.lock"
}

start=$SECONDS
for file in docs/workshop/labs/[0-9][0-9].sh; do
	while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
	lab "$file" &
done
wait
echo "== all labs: $((SECONDS - start))s, $jobs at a time"
failed=$(cd "$bin" && ls ./*.failed 2>/dev/null | sed 's#^\./##; s#\.failed$##' | tr '\n' ' ')
if [ -n "$failed" ]; then
	echo "failed: $failed" >&2
	exit 1
fi
