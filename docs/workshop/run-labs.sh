#!/usr/bin/env bash
# run-labs.sh runs every workshop lab script (docs/workshop/labs/NN.sh) in
# order, each against a fresh stack, and fails if any fails. It builds
# cmd/api and cmd/loadgen once for all of them.
#
# Needs a Redis and a Postgres: REDIS_URL / DATABASE_URL, or
# TEST_REDIS_URL / TEST_DATABASE_URL as in CI; and curl, jq, psql,
# redis-server and redis-cli. ZooKeeper is optional (lab 7).
set -eu
cd "$(dirname "$0")/../.."

bin=$(mktemp -d "${TMPDIR:-/tmp}/seatlock-labs-bin.XXXXXX")
trap 'rm -rf "$bin"' EXIT
for tool in curl jq psql redis-server redis-cli; do
	command -v "$tool" >/dev/null || { echo "run-labs: $tool is missing" >&2; exit 1; }
done
go build -o "$bin/api" ./cmd/api
go build -o "$bin/loadgen" ./cmd/loadgen
export BIN=$bin LAB_PREBUILT=1

failed=()
start=$SECONDS
for lab in docs/workshop/labs/[0-9][0-9].sh; do
	t=$SECONDS
	echo "== $lab"
	if bash "$lab"; then
		echo "== $lab passed in $((SECONDS - t))s"
	else
		echo "== $lab FAILED after $((SECONDS - t))s"
		failed+=("$lab")
	fi
done
echo "== all labs: $((SECONDS - start))s"
if [ "${#failed[@]}" -gt 0 ]; then
	echo "failed: ${failed[*]}" >&2
	exit 1
fi
