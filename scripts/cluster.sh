#!/usr/bin/env bash
# cluster.sh runs several seatlock API instances on one machine, without
# Docker, against one Postgres and one Redis, so that loadgen can show what
# happens across instances.
#
#   scripts/cluster.sh [start]   build cmd/api once, start the instances, wait
#                                for /healthz, print the -targets string, and
#                                stay in the foreground: Ctrl-C stops them all
#   scripts/cluster.sh stop      stop the instances of a running start (from
#                                another terminal)
#
# Environment (all optional):
#   DATABASE_URL  default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
#   REDIS_URL     default redis://127.0.0.1:6379/0
#   INSTANCES     default 3
#   BASE_PORT     default 8081 (instances listen on BASE_PORT, BASE_PORT+1, ...)
#   CLUSTER_DIR   default ${TMPDIR:-/tmp}/seatlock-cluster (binary, pids, logs)
#   PAYMENTS_ADDR default 127.0.0.1:9100: the payment provider (loadgen payments)
#                 the instances charge through; PAYMENT_URL set means use that
#                 provider instead, and PAYMENTS_ADDR=off means none (simulated
#                 payments)
#   CHECK_FENCES  default false: true starts the provider with -check-fences
# Every other cmd/api setting (LOCK_STRATEGY, PAYMENT_DELAY, ADMIN_TOKEN, ...)
# is passed through from the environment. DEMO_MODE is true unless set, so
# that the unsafe strategies can be shown.
#
# Example:
#   scripts/cluster.sh &
#   go run ./cmd/loadgen compare -payments http://127.0.0.1:9100 \
#     -targets http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083
#   scripts/cluster.sh stop
set -euo pipefail

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export DEMO_MODE="${DEMO_MODE:-true}"
instances="${INSTANCES:-3}"
base_port="${BASE_PORT:-8081}"
dir="${CLUSTER_DIR:-${TMPDIR:-/tmp}/seatlock-cluster}"
payments_addr="${PAYMENTS_ADDR:-127.0.0.1:9100}"
check_fences="${CHECK_FENCES:-false}"
pids_file="$dir/pids"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# stop_all sends SIGTERM to every instance this script started (their pids
# are in $pids_file, which it removes first so that a second stop_all, from
# the foreground start's exit trap, does nothing), and waits up to 15 s for
# them to drain.
stop_all() {
	local pids=() pid
	mapfile -t pids 2>/dev/null <"$pids_file" || return 0
	rm -f "$pids_file"
	((${#pids[@]})) || return 0
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for _ in $(seq 150); do
		local alive=0
		for pid in "${pids[@]}"; do
			if kill -0 "$pid" 2>/dev/null; then alive=1; fi
		done
		((alive)) || break
		sleep 0.1
	done
	echo "cluster stopped" >&2
}

start() {
	mkdir -p "$dir"
	if [[ -f "$pids_file" ]]; then
		echo "cluster.sh: a cluster seems to run already ($pids_file); run: $0 stop" >&2
		exit 2
	fi
	echo "building cmd/api and cmd/loadgen into $dir" >&2
	(cd "$root" && go build -o "$dir/api" ./cmd/api && go build -o "$dir/loadgen" ./cmd/loadgen)

	trap 'stop_all; exit 0' INT TERM
	trap 'stop_all' EXIT
	# The payment provider starts first: the instances charge through it.
	if [[ -z "${PAYMENT_URL:-}" && "$payments_addr" != off ]]; then
		local fences=()
		[[ "$check_fences" == true ]] && fences=(-check-fences)
		"$dir/loadgen" payments -addr "$payments_addr" "${fences[@]}" >"$dir/payments.log" 2>&1 &
		echo $! >>"$pids_file"
		export PAYMENT_URL="http://$payments_addr"
		for _ in $(seq 100); do
			curl -fsS -o /dev/null "$PAYMENT_URL/v1/stats" 2>/dev/null && break
			sleep 0.1
		done
		curl -fsS -o /dev/null "$PAYMENT_URL/v1/stats" || {
			echo "cluster.sh: the payment provider did not start; its log:" >&2
			cat "$dir/payments.log" >&2
			exit 1
		}
	fi
	local targets=() port i
	for ((i = 0; i < instances; i++)); do
		port=$((base_port + i))
		ADDR="127.0.0.1:$port" "$dir/api" >"$dir/api-$port.log" 2>&1 &
		echo $! >>"$pids_file"
		targets+=("http://127.0.0.1:$port")
	done

	for target in "${targets[@]}"; do
		local ready=0
		for _ in $(seq 600); do
			if curl -fsS -o /dev/null "$target/healthz" 2>/dev/null; then
				ready=1
				break
			fi
			sleep 0.1
		done
		if ((!ready)); then
			echo "cluster.sh: $target did not answer /healthz within 60 s; its log:" >&2
			tail -n 20 "$dir/api-${target##*:}.log" >&2 || true
			exit 1
		fi
	done

	local joined
	joined="$(
		IFS=,
		echo "${targets[*]}"
	)"
	echo "cluster of $instances instances up (logs in $dir); Ctrl-C or '$0 stop' stops it" >&2
	if [[ -n "${PAYMENT_URL:-}" ]]; then
		echo "payments through $PAYMENT_URL (pass -payments $PAYMENT_URL to loadgen)" >&2
		echo "-targets $joined -payments $PAYMENT_URL"
	else
		echo "-targets $joined"
	fi
	# Wait for the instances; 'cluster.sh stop' ends them and so this wait.
	wait
}

case "${1:-start}" in
start) start ;;
stop) stop_all ;;
*)
	echo "usage: $0 [start|stop]" >&2
	exit 2
	;;
esac
