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
#   scripts/cluster.sh dir       print the cluster's directory (binaries, logs)
#   scripts/cluster.sh [run]     as start, but stay in the foreground: Ctrl-C
#                                (or 'cluster.sh stop' elsewhere) stops them
#
# Unless told otherwise, a cluster takes a database, ports and a directory
# of its own, so that the clusters of other people and other checkouts on
# the machine, and the test suites, never share them by accident; start
# says on stderr which it took. They are named after the user id and a
# digest of this checkout's path, so that start, stop and flags of one
# checkout find the same cluster.
#
# Environment (all optional):
#   DATABASE_URL  default: the cluster's own database, seatlock_cluster_<key>
#                 on postgres://postgres@127.0.0.1:5432, created with psql if
#                 missing and kept after stop (the instances migrate it)
#   REDIS_URL     default redis://127.0.0.1:6379/0 (the live seat map's events
#                 are namespaced by database, so clusters on one Redis do not
#                 see each other's)
#   INSTANCES     default 3
#   BASE_PORT     default: ports the system chooses; set, the instances
#                 listen on BASE_PORT, BASE_PORT+1, ...
#   CLUSTER_DIR   default ${TMPDIR:-/tmp}/seatlock-cluster-<key> (binaries,
#                 pids, logs, flags)
#   PAYMENTS_ADDR default: 127.0.0.1 on a port the system chooses: the payment
#                 provider (loadgen payments) the instances charge through;
#                 PAYMENT_URL set means use that provider instead, and
#                 PAYMENTS_ADDR=off means none (simulated payments)
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
#   "$(scripts/cluster.sh dir)/loadgen" compare $flags -scenario multi
#   scripts/cluster.sh stop
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
key="$(id -u)_$(printf '%s' "$root" | sha256sum | cut -c1-8)"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export DEMO_MODE="${DEMO_MODE:-true}"
instances="${INSTANCES:-3}"
base_port="${BASE_PORT:-}"
dir="${CLUSTER_DIR:-${TMPDIR:-/tmp}/seatlock-cluster-$key}"
payments_addr="${PAYMENTS_ADDR:-127.0.0.1:0}"
check_fences="${CHECK_FENCES:-false}"
export GOMAXPROCS="${GOMAXPROCS:-$(( $(nproc) / instances > 0 ? $(nproc) / instances : 1 ))}"
pids_file="$dir/pids"
flags_file="$dir/flags"
# The Postgres server on which the cluster's own database is made.
pg_server="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

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

# own_database sets DATABASE_URL to the cluster's own database on
# $pg_server, creating it if it is missing, and says which it took.
own_database() {
	local db="seatlock_cluster_$key"
	command -v psql >/dev/null || {
		echo "cluster.sh: psql is needed to create the cluster's database $db; install it (postgresql-client) or set DATABASE_URL" >&2
		exit 1
	}
	if [[ "$(psql "$pg_server" -qAtc "select 1 from pg_database where datname = '$db'")" != 1 ]]; then
		psql "$pg_server" -qc "create database $db" >/dev/null
		echo "cluster.sh: database $db created on ${pg_server%/*} (kept after stop; psql '$pg_server' -c 'drop database $db' drops it)" >&2
	else
		echo "cluster.sh: database $db on ${pg_server%/*}, as before" >&2
	fi
	export DATABASE_URL="${pg_server%/*}/$db?sslmode=disable"
}

# address_in LOG PATTERN waits up to 60 s for the http:// address that
# follows PATTERN in LOG, while the process of pid $2 lives, and prints it.
address_in() {
	local log=$1 pid=$2 pattern=$3 addr
	for _ in $(seq 600); do
		addr=$(grep -o "$pattern http://[0-9.:]*" "$log" 2>/dev/null | head -n 1 | sed 's/.* //')
		if [[ -n "$addr" ]]; then
			echo "$addr"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
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
	if [[ -z "${DATABASE_URL:-}" ]]; then
		own_database
	fi
	echo "building cmd/api and cmd/loadgen into $dir" >&2
	(cd "$root" && go build -o "$dir/api" ./cmd/api && go build -o "$dir/loadgen" ./cmd/loadgen)

	trap 'stop_all; exit 1' INT TERM
	trap 'stop_all' EXIT
	# The payment provider starts first: the instances charge through it.
	if [[ -z "${PAYMENT_URL:-}" && "$payments_addr" != off ]]; then
		local fences=() pid
		[[ "$check_fences" == true ]] && fences=(-check-fences)
		daemon "$dir/payments.log" "$dir/loadgen" payments -addr "$payments_addr" "${fences[@]}"
		pid=$(tail -n 1 "$pids_file")
		PAYMENT_URL=$(address_in "$dir/payments.log" "$pid" "provider on") &&
			curl -fsS --max-time 2 -o /dev/null "$PAYMENT_URL/v1/stats" || {
			echo "cluster.sh: the payment provider did not start; its log:" >&2
			cat "$dir/payments.log" >&2
			exit 1
		}
		export PAYMENT_URL
	fi
	local logs=() pids=() targets=() i addr
	for ((i = 0; i < instances; i++)); do
		addr=127.0.0.1:0
		[[ -n "$base_port" ]] && addr="127.0.0.1:$((base_port + i))"
		logs+=("$dir/api-$i.log")
		ADDR="$addr" daemon "${logs[$i]}" "$dir/api"
		pids+=("$(tail -n 1 "$pids_file")")
	done

	# Each instance has 60 s to answer; one that exits (a port in use, a
	# bad setting, a backend that does not answer) fails the start at once.
	for i in "${!pids[@]}"; do
		local target ready=0
		if target=$(address_in "${logs[$i]}" "${pids[$i]}" "listening on"); then
			for _ in $(seq 100); do
				if curl -fsS --max-time 2 -o /dev/null "$target/healthz" 2>/dev/null; then
					ready=1
					break
				fi
				kill -0 "${pids[$i]}" 2>/dev/null || break
				sleep 0.1
			done
		fi
		if ((!ready)); then
			echo "cluster.sh: instance $((i + 1)) did not answer /healthz; its log (${logs[$i]}):" >&2
			tail -n 20 "${logs[$i]}" >&2 || true
			exit 1
		fi
		targets+=("$target")
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
	{
		echo "cluster up: $instances API $( ((instances == 1)) && echo instance || echo instances); '$0 stop' stops it"
		echo "  instances  $joined (seat map: ${targets[0]}/)"
		echo "  payments   ${PAYMENT_URL:-none: simulated}"
		echo "  database   $(sed -E 's#^([a-z]+://)([^:@/]*)(:[^@/]*)?@#\1\2@#' <<<"$DATABASE_URL")"
		echo "  redis      $(sed -E 's#^([a-z+]+://)([^:@/]*)(:[^@/]*)?@#\1\2@#' <<<"$REDIS_URL")"
		echo "  directory  $dir (binaries, logs)"
	} >&2
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
dir) echo "$dir" ;;
*)
	echo "usage: $0 [start|stop|flags|dir|run]" >&2
	exit 2
	;;
esac
