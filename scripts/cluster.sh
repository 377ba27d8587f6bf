#!/usr/bin/env bash
# cluster.sh runs several seatlock API instances on one machine, without
# Docker, against one Postgres and one Redis, so that loadgen can show what
# happens across instances.
#
#   scripts/cluster.sh start     build cmd/api and cmd/loadgen, start the payment
#                                provider and the instances in the background,
#                                and return once every one answers /healthz,
#                                printing loadgen's -targets (and -payments)
#                                flags on stdout; exit 1, with the failing log
#                                and nothing left running, if one does not
#   scripts/cluster.sh stop      stop them (waits for them to drain)
#   scripts/cluster.sh flags     print the flags of the running cluster again
#   scripts/cluster.sh [run]     as start, but stay in the foreground: Ctrl-C
#                                (or 'cluster.sh stop' elsewhere) stops them
#
# Environment (all optional):
#   DATABASE_URL  default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
#   REDIS_URL     default redis://127.0.0.1:6379/0
#   INSTANCES     default 3
#   BASE_PORT     default 8081 (instances listen on BASE_PORT, BASE_PORT+1, ...)
#   CLUSTER_DIR   default ${TMPDIR:-/tmp}/seatlock-cluster (binaries, pids, logs, flags)
#   PAYMENTS_ADDR default 127.0.0.1:9100: the payment provider (loadgen payments)
#                 the instances charge through; PAYMENT_URL set means use that
#                 provider instead, and PAYMENTS_ADDR=off means none (simulated
#                 payments)
#   CHECK_FENCES  default false: true starts the provider with -check-fences
#   GOMAXPROCS    default the machine's cores / INSTANCES, at least 1: the
#                 instances share the cores (see the README on several
#                 instances on one machine)
# Every other cmd/api setting (LOCK_STRATEGY, PAYMENT_DELAY, ADMIN_TOKEN,
# DB_MAX_CONNS, ...) is passed through from the environment. DEMO_MODE is
# true unless set, so that the unsafe strategies can be shown.
#
# Example:
#   flags=$(scripts/cluster.sh start)
#   "${CLUSTER_DIR:-/tmp/seatlock-cluster}/loadgen" compare $flags -scenario multi
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
export GOMAXPROCS="${GOMAXPROCS:-$(( $(nproc) / instances > 0 ? $(nproc) / instances : 1 ))}"
pids_file="$dir/pids"
flags_file="$dir/flags"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# stop_all sends SIGTERM to every instance this script started (their pids
# are in $pids_file, which it removes first so that a second stop_all, from
# the foreground start's exit trap, does nothing), and waits up to 15 s for
# them to drain.
stop_all() {
	local pids=() pid
	mapfile -t pids 2>/dev/null <"$pids_file" || return 0
	rm -f "$pids_file" "$flags_file"
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

# daemon starts a command of the cluster in a session of its own (so that
# neither the terminal's Ctrl-C nor the end of this script reaches it), its
# output in a log and its stdin closed, and records its pid. Run from a
# script, the background job is no process group leader, so setsid needs
# no fork and $! is the command's own pid.
daemon() {
	local log=$1
	shift
	setsid "$@" </dev/null >"$log" 2>&1 &
	echo $! >>"$pids_file"
}

# start starts the cluster in the background and returns once every
# instance answers /healthz; on any failure it stops what it started and
# exits 1.
start() {
	mkdir -p "$dir"
	if [[ -f "$pids_file" ]]; then
		echo "cluster.sh: a cluster seems to run already ($pids_file); run: $0 stop" >&2
		exit 2
	fi
	echo "building cmd/api and cmd/loadgen into $dir" >&2
	(cd "$root" && go build -o "$dir/api" ./cmd/api && go build -o "$dir/loadgen" ./cmd/loadgen)

	trap 'stop_all; exit 1' INT TERM
	trap 'stop_all' EXIT
	# The payment provider starts first: the instances charge through it.
	if [[ -z "${PAYMENT_URL:-}" && "$payments_addr" != off ]]; then
		local fences=()
		[[ "$check_fences" == true ]] && fences=(-check-fences)
		daemon "$dir/payments.log" "$dir/loadgen" payments -addr "$payments_addr" "${fences[@]}"
		export PAYMENT_URL="http://$payments_addr"
		for _ in $(seq 100); do
			curl -fsS --max-time 2 -o /dev/null "$PAYMENT_URL/v1/stats" 2>/dev/null && break
			sleep 0.1
		done
		curl -fsS --max-time 2 -o /dev/null "$PAYMENT_URL/v1/stats" || {
			echo "cluster.sh: the payment provider did not start; its log:" >&2
			cat "$dir/payments.log" >&2
			exit 1
		}
	fi
	local targets=() pids=() port i
	for ((i = 0; i < instances; i++)); do
		port=$((base_port + i))
		ADDR="127.0.0.1:$port" daemon "$dir/api-$port.log" "$dir/api"
		pids+=("$(tail -n 1 "$pids_file")")
		targets+=("http://127.0.0.1:$port")
	done

	# Each instance has 60 s to answer; one that exits (a port in use, a
	# bad setting) fails the start at once.
	for i in "${!targets[@]}"; do
		local target=${targets[$i]} ready=0
		for _ in $(seq 600); do
			if curl -fsS --max-time 2 -o /dev/null "$target/healthz" 2>/dev/null; then
				ready=1
				break
			fi
			kill -0 "${pids[$i]}" 2>/dev/null || break
			sleep 0.1
		done
		if ((!ready)); then
			echo "cluster.sh: $target did not answer /healthz; its log:" >&2
			tail -n 20 "$dir/api-${target##*:}.log" >&2 || true
			exit 1
		fi
	done

	local joined
	joined="$(
		IFS=,
		echo "${targets[*]}"
	)"
	if [[ -n "${PAYMENT_URL:-}" ]]; then
		echo "-targets $joined -payments $PAYMENT_URL" >"$flags_file"
	else
		echo "-targets $joined" >"$flags_file"
	fi
	trap - INT TERM EXIT
	echo "cluster of $instances instances up (logs in $dir); '$0 stop' stops it" >&2
	cat "$flags_file"
}

# run is start in the foreground: it waits until the instances end, and
# Ctrl-C stops them.
run() {
	start
	trap 'stop_all; exit 0' INT TERM
	trap 'stop_all' EXIT
	# The instances are this shell's children (setsid gave them sessions
	# of their own, not other parents): wait ends when 'cluster.sh stop'
	# has stopped them.
	wait
}

case "${1:-run}" in
start) start ;;
run) run ;;
stop) stop_all ;;
flags)
	cat "$flags_file" 2>/dev/null || {
		echo "cluster.sh: no cluster runs (no $flags_file); run: $0 start" >&2
		exit 1
	}
	;;
*)
	echo "usage: $0 [start|stop|flags|run]" >&2
	exit 2
	;;
esac
