# lib.sh: the few shell functions every lab uses. Source it from the
# repository root, in your terminal as in the lab scripts:
#
#   source docs/workshop/labs/lib.sh
#
# It sets, unless already set:
#   LAB_DIR    a scratch directory of this run: binaries, logs, pids, reports
#   LAB_RUN    this run's name, in the names of its databases
#   BIN        where lab_build puts api and loadgen ($LAB_DIR/bin)
#   REDIS_URL  the Redis every instance shares (TEST_REDIS_URL, else local)
#   PG_URL     the Postgres server lab_db creates databases on
#              (DATABASE_URL, else TEST_DATABASE_URL, else local)
# and defines:
#   lab_build              build cmd/api and cmd/loadgen into $BIN
#   lab_db                 create a fresh, empty database of this run
#                          (seatlock_lab_<LAB_RUN>_<n>); print its URL
#   lab_start NAME [VAR=value ...]
#                          start $BIN/api with ADDR=127.0.0.1:0 and the given
#                          settings, wait until it answers, print its URL
#   lab_pid NAME           the process id of instance NAME
#   lab_redis [VAR=value ...]
#                          start a private redis-server on a free port, with the
#                          given environment (a fast clock, lab 11); print its URL
#   lab_redis_restart URL  kill lab_redis's server at URL, as a crash would, and
#                          start it again on its port without its data
#   lab_sentinel           a primary and a replica (lab_redis) and a
#                          redis-sentinel watching them; print the
#                          redis+sentinel:// URL an instance takes as REDIS_URL
#   lab_failover URL FILE  kill the primary of lab_sentinel's URL, wait until
#                          the Sentinel has promoted the replica, and append the
#                          fault's window to FILE (loadgen -faults)
#   lab_zookeeper          start a ZooKeeper server if installed; print host:port
#   lab_payments [-check-fences]
#                          start the payment provider (loadgen payments) on a
#                          free port; print its URL
#   lab_gate NAME URL      start a gate (loadgen gate) in front of URL's
#                          host:port; print URL with the gate's address in
#                          it. kill -USR1 "$(lab_pid NAME)" closes it (what
#                          clients send is held), kill -USR2 opens it.
#   lab_paid URL           the counts of the payment provider at URL since
#                          the last lab_paid of it (since it started, the
#                          first time): one step's charges, refunds,
#                          overlaps, stale charges refused and voids, the
#                          same however often a step is repeated
#   lab_events URL SCREENING FILE
#                          record the live events of SCREENING (what the seat
#                          map draws its lock timeline from) from the API at
#                          URL into FILE until the lab ends; print the seat
#                          map's address of the screening
#   lab_holders FILE SEAT  once every lock section of SEAT recorded in FILE
#                          has ended (up to 10 s), print the most requests
#                          that had SEAT locked at once, counting overlaps
#                          of more than 5 ms as the seat map's timeline
#                          does: 2 is two holders (needs DEMO_MODE=true on
#                          the instances)
#   lab_expect_answer FILE STATUS REGEX [WHAT]
#                          check an answer saved by curl -w '%{http_code}\n'
#   lab_wait_log NAME REGEX
#                          wait up to 10 s for a line of NAME's log to match
#   lab_until SECONDS WHAT COMMAND...
#                          run COMMAND every half second until its output is
#                          not empty and it succeeds; fail after SECONDS,
#                          saying WHAT it waited for
#   lab_wait_settled DB SCREENING
#                          wait up to 30 s until no payment of the screening
#                          in the database DB is open (pending or refunding)
#   lab_cleanup            stop everything started above, drop the databases
#   lab_script TEXT        (what every lab script calls first; not for a terminal)
#                          set -eu, work from the repository root, clean up
#                          on exit, and refuse to run if the script's "# lab"
#                          lines are not all in TEXT
#
# Nothing is shared by accident with another lab run, a cluster or the tests
# on the same machine: each run has its own directory, databases and ports
# (the API on 127.0.0.1:0, the other servers on free ports), and the
# functions that take one say so on stderr. Only REDIS_URL is shared (the
# live seat map's events are namespaced by database).
#
# Sourcing it changes no shell option: your interactive shell stays as it
# was; only lab_script, which the lab scripts call, sets -eu.

LAB_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
LAB_DIR=${LAB_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/seatlock-lab.XXXXXX")}
LAB_RUN=${LAB_RUN:-$(printf '%s %s %s' "$LAB_DIR" "$$" "$(date +%s%N)" | sha256sum | cut -c1-10)}
BIN=${BIN:-$LAB_DIR/bin}
REDIS_URL=${REDIS_URL:-${TEST_REDIS_URL:-redis://127.0.0.1:6379/0}}
PG_URL=${PG_URL:-${DATABASE_URL:-${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}}}
export LAB_DIR LAB_RUN BIN REDIS_URL PG_URL
mkdir -p "$LAB_DIR"

lab_build() {
	mkdir -p "$BIN"
	[ -x "$BIN/api" ] && [ -x "$BIN/loadgen" ] && [ -n "${LAB_PREBUILT:-}" ] && return 0
	(cd "$LAB_REPO" && go build -o "$BIN/api" ./cmd/api && go build -o "$BIN/loadgen" ./cmd/loadgen)
}

lab_until() {
	local seconds=$1 what=$2 i
	shift 2
	for i in $(seq $((seconds * 2))); do
		[ -n "$("$@" 2>/dev/null)" ] && return 0
		sleep 0.5
	done
	echo "lab_until: not within $seconds s: $what" >&2
	return 1
}

lab_wait_settled() {
	local i open
	for i in $(seq 60); do
		open=$(psql "$1" -Atc "select count(*) from payments where screening_id = '$2' and status in ('pending', 'refunding')")
		[ "$open" = 0 ] && return 0
		sleep 0.5
	done
	echo "lab_wait_settled: payments of $2 still open after 30 s" >&2
	return 1
}

lab_db() {
	local name url n
	n=$(($(cat "$LAB_DIR/databases" 2>/dev/null | wc -l) + 1))
	name="seatlock_lab_${LAB_RUN}_$n"
	psql "$PG_URL" -qc "create database $name" >/dev/null || return 1
	echo "$name" >>"$LAB_DIR/databases"
	url=$(sed -E "s#/[^/?]+(\?|$)#/$name\1#" <<<"$PG_URL")
	echo "lab_db: database $name (dropped when the lab ends)" >&2
	echo "$url"
}

lab_start() {
	local name=$1 log addr
	shift
	log="$LAB_DIR/$name.log"
	: >"$log" # before the server starts, so that the first look finds it
	env REDIS_URL="$REDIS_URL" "$@" ADDR=127.0.0.1:0 "$BIN/api" >"$log" 2>&1 </dev/null &
	echo "$! $name" >>"$LAB_DIR/pids"
	for _ in $(seq 300); do
		addr=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -n 1 | sed 's/listening on //')
		if [ -n "$addr" ] && curl -fsS "$addr/healthz" >/dev/null 2>&1; then
			echo "lab_start: $name on $addr (log $log)" >&2
			echo "$addr"
			return 0
		fi
		sleep 0.1
	done
	echo "lab_start: $name did not start; its log:" >&2
	cat "$log" >&2
	return 1
}

lab_pid() {
	awk -v n="$1" '$2 == n { print $1 }' "$LAB_DIR/pids" | tail -n 1
}

# lab_free_port prints a TCP port of 127.0.0.1 that nothing listens on.
lab_free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 30000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
	done
}

lab_redis() {
	local port pid
	# A port found free can be taken before redis-server binds it: then the
	# server exits at once, and another port is tried.
	for _ in 1 2 3; do
		port=$(lab_free_port)
		env "$@" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$LAB_DIR" \
			>"$LAB_DIR/redis-$port.log" 2>&1 </dev/null &
		pid=$!
		echo "$pid redis-$port" >>"$LAB_DIR/pids"
		for _ in $(seq 150); do
			redis-cli -p "$port" ping >/dev/null 2>&1 && {
				echo "lab_redis: redis-server on 127.0.0.1:$port" >&2
				echo "redis://127.0.0.1:$port/0"
				return 0
			}
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		echo "lab_redis: redis-server did not start on $port (another port is tried, up to three):" >&2
		tail -n 3 "$LAB_DIR/redis-$port.log" >&2
	done
	return 1
}

lab_redis_restart() {
	local port pid
	port=$(sed -E 's#^redis://[^:]+:([0-9]+).*#\1#' <<<"$1")
	pid=$(lab_pid "redis-$port")
	kill -KILL "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	# In a subshell, so that the server is not a child of the lab's shell
	# (whose wait would wait for it too).
	(
		redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$LAB_DIR" \
			>>"$LAB_DIR/redis-$port.log" 2>&1 </dev/null &
		echo "$! redis-$port" >>"$LAB_DIR/pids"
	)
	for _ in $(seq 150); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "lab_redis_restart: redis-server did not come back on $port" >&2
	return 1
}

lab_sentinel() {
	local primary replica pport rport sport conf
	command -v redis-sentinel >/dev/null || {
		echo "lab_sentinel: redis-sentinel is not installed (apt-get install redis-sentinel)" >&2
		return 1
	}
	primary=$(lab_redis) && replica=$(lab_redis) || return 1
	pport=$(sed -E 's#^redis://[^:]+:([0-9]+).*#\1#' <<<"$primary")
	rport=$(sed -E 's#^redis://[^:]+:([0-9]+).*#\1#' <<<"$replica")
	redis-cli -p "$rport" replicaof 127.0.0.1 "$pport" >/dev/null
	for _ in $(seq 100); do
		redis-cli -p "$rport" info replication | grep -q '^master_link_status:up' && break
		sleep 0.1
	done
	# A free port can be taken by someone else before the Sentinel binds
	# it: then it exits at once, and another port is tried.
	local try pid
	for try in 1 2 3; do
		sport=$(lab_free_port)
		conf="$LAB_DIR/sentinel-$sport.conf"
		printf 'port %s\nbind 127.0.0.1\nsentinel monitor seatlock 127.0.0.1 %s 1\nsentinel down-after-milliseconds seatlock 500\nsentinel failover-timeout seatlock 5000\n' \
			"$sport" "$pport" >"$conf"
		redis-sentinel "$conf" >"$LAB_DIR/sentinel-$sport.log" 2>&1 </dev/null &
		pid=$!
		echo "$pid sentinel-$sport" >>"$LAB_DIR/pids"
		for _ in $(seq 100); do
			[ "$(redis-cli -p "$sport" sentinel get-master-addr-by-name seatlock 2>/dev/null | tail -n 1)" = "$pport" ] &&
				{ echo "redis+sentinel://127.0.0.1:$sport/0?master_name=seatlock"; return 0; }
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && break
	done
	echo "lab_sentinel: the Sentinel does not know the primary; its log:" >&2
	tail -n 5 "$LAB_DIR/sentinel-$sport.log" >&2
	return 1
}

lab_failover() {
	local sport primary start
	sport=$(sed -E 's#^redis\+sentinel://[^:]+:([0-9]+).*#\1#' <<<"$1")
	primary=$(redis-cli -p "$sport" sentinel get-master-addr-by-name seatlock | tail -n 1)
	start=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
	kill -KILL "$(lab_pid "redis-$primary")"
	for _ in $(seq 200); do
		if [ "$(redis-cli -p "$sport" sentinel get-master-addr-by-name seatlock | tail -n 1)" != "$primary" ]; then
			printf '{"name":"redis primary killed until the replica is promoted","start":"%s","end":"%s"}\n' \
				"$start" "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" >>"$2"
			return 0
		fi
		sleep 0.1
	done
	echo "lab_failover: no replica promoted after 20 s" >&2
	return 1
}

lab_payments() {
	local port pid
	# As for lab_redis: a port found free can be taken before the provider
	# binds it (other programs on the machine start servers too); then it
	# exits at once, and another port is tried.
	for _ in 1 2 3; do
		port=$(lab_free_port)
		"$BIN/loadgen" payments -addr "127.0.0.1:$port" "$@" >"$LAB_DIR/payments-$port.log" 2>&1 </dev/null &
		pid=$!
		echo "$pid payments-$port" >>"$LAB_DIR/pids"
		for _ in $(seq 100); do
			curl -fsS -o /dev/null "http://127.0.0.1:$port/v1/stats" 2>/dev/null && {
				echo "lab_payments: payment provider on http://127.0.0.1:$port" >&2
				echo "http://127.0.0.1:$port"
				return 0
			}
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		echo "lab_payments: the payment provider did not start on $port (another port is tried, up to three); its log:" >&2
		cat "$LAB_DIR/payments-$port.log" >&2
	done
	return 1
}

lab_paid() {
	local last now
	last="$LAB_DIR/paid-$(sed -E 's#[^0-9]##g' <<<"$1").json"
	now=$(curl -fsS --max-time 5 "$1/v1/stats") || { echo "lab_paid: no stats from $1" >&2; return 1; }
	[ -f "$last" ] || echo '{}' >"$last"
	# max_concurrent is the provider's highest ever, not a step's: left out.
	jq -c --slurpfile before "$last" \
		'del(.max_concurrent) | with_entries(if .value == null then . else .value -= ($before[0][.key] // 0) end)' <<<"$now"
	echo "$now" >"$last"
}

lab_events() {
	# In a subshell, so that the recording is not a job of the caller's
	# shell, whose wait would wait for it.
	(
		curl -sN "$1/v1/screenings/$2/events" >"$3" 2>/dev/null </dev/null &
		echo "$! events-$2" >>"$LAB_DIR/pids"
	)
	lab_until 10 "the event stream of $2 from $1" grep -m 1 '^data: ' "$3" >/dev/null || return 1
	echo "$1/?screening=$2"
}

# lab_sections FILE SEAT prints the "entered" and "left" events of SEAT in
# FILE, one JSON object a line, in the order they came, with "ms", the
# event's time of day in milliseconds.
lab_sections() {
	sed -n 's/^data: //p' "$1" | jq -c --arg seat "$2" '
		select(.kind == "entered" or .kind == "left") | select(.seats | index($seat))
		| (.at | capture("T(?<h>[0-9]+):(?<m>[0-9]+):(?<s>[0-9.]+)")) as $t
		| {kind, holder, ms: (((($t.h | tonumber) * 60 + ($t.m | tonumber)) * 60 + ($t.s | tonumber)) * 1000)}'
}

# lab_holders counts as the seat map's lock timeline draws: two sections
# overlap when they do by more than 5 ms, since a request publishes its
# "left" only after it let the locks go, and the next holder may enter a
# moment before.
lab_holders() {
	local entered left
	for _ in $(seq 100); do
		entered=$(lab_sections "$1" "$2" | grep -c '"entered"')
		left=$(lab_sections "$1" "$2" | grep -c '"left"')
		[ "$entered" -gt 0 ] && [ "$entered" = "$left" ] && break
		sleep 0.1
	done
	[ "$entered" = "$left" ] || echo "lab_holders: $2 entered $entered times, left $left times, after 10 s" >&2
	lab_sections "$1" "$2" | jq -s '
		(reduce .[] as $e ({}; .[$e.holder] += {($e.kind): $e.ms})
			| [.[] | {from: .entered, to: (.left // 1e15)} | select(.from != null)]) as $s
		| [$s[] as $a | [$s[] | select(.from <= $a.from and .to > $a.from + 5)] | length] | max // 0'
}

lab_gate() {
	local name=$1 url=$2 log addr
	log="$LAB_DIR/$name.log"
	: >"$log"
	"$BIN/loadgen" gate -addr 127.0.0.1:0 -to "$(sed -E 's#^[a-z+]+://([^@/]*@)?([^/?]+).*#\2#' <<<"$url")" \
		>"$log" 2>&1 </dev/null &
	echo "$! $name" >>"$LAB_DIR/pids"
	for _ in $(seq 100); do
		addr=$(sed -nE 's/^gate: (127\.0\.0\.1:[0-9]+) -> .*/\1/p' "$log" | head -n 1)
		[ -n "$addr" ] && { sed -E "s#^([a-z+]+://([^@/]*@)?)[^/?]+#\1$addr#" <<<"$url"; return 0; }
		sleep 0.1
	done
	echo "lab_gate: the gate did not start; its log:" >&2
	cat "$log" >&2
	return 1
}

# lab_wait_log NAME REGEX [N] waits up to 10 s for N lines (default 1) of
# NAME's log to match REGEX: a gate that holds a second time logs a second
# "holding" line.
lab_wait_log() {
	for _ in $(seq 100); do
		[ "$(grep -cE -- "$2" "$LAB_DIR/$1.log")" -ge "${3:-1}" ] && return 0
		sleep 0.1
	done
	echo "lab_wait_log: no line of $1's log matches /$2/ after 10 s:" >&2
	tail -n 5 "$LAB_DIR/$1.log" >&2
	return 1
}

lab_zookeeper() {
	local port dir
	if ! [ -f /usr/share/java/zookeeper.jar ] || ! command -v java >/dev/null; then
		echo "lab_zookeeper: ZooKeeper is not installed (apt-get install zookeeper)" >&2
		return 1
	fi
	port=$(lab_free_port)
	dir="$LAB_DIR/zk-$port"
	mkdir -p "$dir"
	printf 'tickTime=500\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n' \
		"$dir/data" "$port" >"$dir/zoo.cfg"
	java -Xmx256m -XX:+UseSerialGC -cp /usr/share/java/zookeeper.jar \
		org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" >"$dir/server.log" 2>&1 </dev/null &
	echo "$! zookeeper-$port" >>"$LAB_DIR/pids"
	for _ in $(seq 150); do
		[ "$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf ruok >&3 && timeout 1 cat <&3) 2>/dev/null)" = imok ] &&
			{ echo "127.0.0.1:$port"; return 0; }
		sleep 0.2
	done
	echo "lab_zookeeper: ZooKeeper did not start on $port" >&2
	return 1
}

lab_cleanup() {
	local pid name
	if [ -f "$LAB_DIR/pids" ]; then
		# API instances first, with SIGTERM so that they drain and release
		# their locks; a stopped (SIGSTOP) one is continued first, and asked
		# for its screenings, whose keys in Redis go away with the lab.
		while read -r pid name; do
			kill -CONT "$pid" 2>/dev/null || true
		done <"$LAB_DIR/pids"
		lab_screening_ids >"$LAB_DIR/screening-ids" 2>/dev/null || true
		while read -r pid name; do
			kill -TERM "$pid" 2>/dev/null || true
		done <"$LAB_DIR/pids"
		while read -r pid name; do
			for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -KILL "$pid" 2>/dev/null || true
		done <"$LAB_DIR/pids"
		rm -f "$LAB_DIR/pids"
		lab_forget_keys "$LAB_DIR/screening-ids" || true
	fi
	if [ -f "$LAB_DIR/databases" ]; then
		while read -r name; do
			psql "$PG_URL" -qc "drop database if exists $name with (force)" >/dev/null 2>&1 || true
		done <"$LAB_DIR/databases"
		rm -f "$LAB_DIR/databases"
	fi
}

# lab_screening_ids prints every screening of every API the lab started,
# asked while they run: its id, rows and seats per row on a line.
lab_screening_ids() {
	local log addr page next
	for log in "$LAB_DIR"/*.log; do
		addr=$(grep -o 'listening on http://[0-9.:]*' "$log" | head -n 1 | sed 's/listening on //')
		[ -n "$addr" ] || continue
		next=""
		for _ in $(seq 100); do
			page=$(curl -fsS --max-time 5 "$addr/v1/screenings?limit=1000${next:+&after=$next}") || break
			jq -r '.screenings[] | "\(.id) \(.rows) \(.seats_per_row)"' <<<"$page"
			next=$(jq -r '.next // empty' <<<"$page")
			[ -n "$next" ] || break
		done
	done
}

# lab_forget_keys SCREENINGS deletes the fence counters of the seats of the
# screenings listed in the file SCREENINGS (lab_screening_ids) from the
# shared Redis, for every lock that keeps them there (redis, redlock, the
# workshop's lab-redis): nothing a lab wrote stays behind. Names are made,
# not searched for, so one redis-cli does it whatever else Redis holds.
# The screening "demo", which every API has, is left alone: other programs
# on the machine use it.
lab_forget_keys() {
	[ -s "$1" ] || return 0
	awk '$1 != "demo" {
		for (p = 0; p < 3; p++) {
			prefix = p == 0 ? "seatlock:fence:" : p == 1 ? "seatlock:redlock:fence:" : "seatlock:lab:fence:"
			line = "DEL"
			for (r = 0; r < $2; r++)
				for (n = 1; n <= $3; n++)
					line = line " " prefix "{" $1 "}:" substr("ABCDEFGHIJKLMNOPQRSTUVWXYZ", r + 1, 1) n
			print line
		}
	}' "$1" | redis-cli -u "$REDIS_URL" >/dev/null
}

lab_script() {
	local script
	set -eu
	script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
	cd "$LAB_REPO"
	trap 'lab_cleanup; rm -rf "$LAB_DIR"' EXIT
	lab_check_sync "$script" "$1"
	echo "lab: run $LAB_RUN in $LAB_DIR (removed at the end)" >&2
}

# lab_check_sync fails when a line of the lab script that ends in "# lab" is
# not, word for word, a line of the lab's text: the text shows exactly the
# commands the script runs.
lab_check_sync() {
	local script=$1 text=$2 line missing=0
	while IFS= read -r line; do
		line=$(sed -E 's/[[:space:]]*# lab$//; s/^[[:space:]]+//' <<<"$line")
		if ! sed -E 's/^[[:space:]]+//' "$text" | grep -qxF -- "$line"; then
			echo "not in $(basename "$text"): $line" >&2
			missing=1
		fi
	done < <(grep -E '# lab$' "$script")
	return $missing
}

# lab_expect FILE REGEX [WHAT] fails, showing FILE, when no line matches.
lab_expect() {
	if ! grep -qE -- "$2" "$1"; then
		echo "FAIL: ${3:-expected /$2/} in $1:" >&2
		cat "$1" >&2
		return 1
	fi
	echo "ok: ${3:-$2}"
}

# lab_expect_answer FILE STATUS REGEX [WHAT]: FILE holds an answer as
# curl -s -w '%{http_code}\n' prints it, the JSON body and then the status
# on a line of its own; fails, showing FILE, unless the status is STATUS
# and the body matches REGEX.
lab_expect_answer() {
	if [ "$(tail -n 1 "$1")" != "$2" ] || ! head -n -1 "$1" | grep -qE -- "$3"; then
		echo "FAIL: ${4:-expected $2 and /$3/} in $1:" >&2
		cat "$1" >&2
		return 1
	fi
	echo "ok: ${4:-$2 /$3/}"
}

# lab_number FILE LABEL prints the first number after LABEL in a loadgen report.
lab_number() {
	grep -E "^$2 " "$1" | head -n 1 | sed -E "s/^$2 +([0-9.]+).*/\1/"
}
