#!/usr/bin/env bash
# bench-loadgen.sh measures the load generator and the booking API on this
# machine, as ratios taken in one run (docs/benchmarks-loadgen.md):
#
#   1. generation: loadgen -scenario healthz vs wrk, same endpoint, same
#      number of connections;
#   2. booking throughput: loadgen -scenario spread (default strategy) on one
#      and on three API instances over Postgres, vs pgbench -N at the same
#      concurrency; and the CPU time each costs, per process, from /proc:
#      the API instances' per confirmed booking (all, and the cheapest and
#      dearest instance), the Postgres backends' per booking (those
#      connected to the bench database) and per pgbench transaction
#      (sampled inside the run, without its start and end), loadgen's and
#      the Redis server's per booking; and per booking, what multiplies
#      with the instances: the API's and the backends' context switches and
#      read/write system calls, Postgres transactions committed (group
#      commit's batches: per 1000 bookings), the commands Redis ran and
#      the reads it processed (about one per round trip). The Redis figures
#      count every client of REDIS_URL: give the script a Redis of its own;
#   3. parallelism: spread with a payment delay under keyed, redis,
#      keyed+redis and global, on one instance over Postgres and over the
#      in-memory store;
#   quota. horizontal scale as on separate machines (PARTS=quota, not run
#      by default; needs root): every API instance in a CPU cgroup of its
#      own (v2 cpu.max, or v1 cpu.cfs_quota_us) with GOMAXPROCS=1, one
#      instance with QUOTA_CLIENTS pinned clients against three with three
#      times as many, at each quota of QUOTA, each round in the order
#      ABBA (one, three, three, one; the next round three, one, one,
#      three), its efficiency from the means; Postgres, Redis and
#      loadgen are not limited.
#      Per run: bookings/s, API CPU per booking (all, cheapest and dearest
#      instance, from each instance's confirmed bookings), the instances'
#      context switches per booking (wake-ups), Postgres CPU per booking,
#      commits per 1000 bookings, Redis reads (round trips) per booking;
#      per round, the efficiency three / (3 x one). A run counts
#      only when every instance was throttled (nr_throttled grew) and used
#      at least QUOTA_USE of its quota, and the machine stayed idle at least
#      MIN_IDLE of the time (/proc/stat): otherwise the figure measures the
#      machine, not the instances, and is recorded as "invalid" with why.
#      The cgroups it makes are removed at the end.
#
# Needs wrk, pgbench, createdb/dropdb, ps, curl and jq, a Postgres and a Redis.
# It creates two fresh databases and drops them at the end, and stops every
# process it started (and only those).
#
# Environment (all optional):
#   PGURL_BASE  default postgres://postgres@127.0.0.1:5432  (trust auth)
#   REDIS_URL   default redis://127.0.0.1:6379/0
#   REPS        default 2    repetitions of every measurement (medians reported)
#   DUR         default 8    seconds of each timed run (wrk, loadgen healthz, pgbench; at least 6)
#   CLIENTS     default 64   connections / clients / pgbench clients
#   DELAY       default 50ms payment delay of part 3
#   BOOKINGS    default 5000 bookings per throughput run (part 2)
#   PAR_REQS    default 3000 bookings per parallelism run (part 3; global does 200)
#   BASE_PORT   default 18081
#   BASE_API    other cmd/api binaries (space-separated) to measure as "before"
#               in parts 2-3, each named by its file name, which must be
#               unique and not api (this tree's own); a script that execs
#               one with settings (GOMAXPROCS=1 exec api) works too
#   PIN_CLIENTS default 1: part 2's loadgen runs with -pin-clients, each client
#               sending to one instance (as a balancer that keeps a client's
#               connection does), not every client to every instance, which
#               cost the three instances and loadgen a third more CPU per
#               booking (docs/benchmarks-loadgen.md); 0 gives that round
#               robin, as in figures before 2026-11-25 19:00 UTC
#   MULTI_ENV   settings of each of part 2's three instances, such as
#               "GOMAXPROCS=1" (README: several instances on one machine);
#               default none
#   SHARE       default 0; 1 adds to part 2 a run of one instance with a
#               third of the clients, the share each of the three instances
#               gets ("x1-share"): what serving a third of the load costs an
#               instance per booking, apart from sharing the machine with
#               two others
#   PARTS       default "1 2 3"  which parts to run ("quota" for the quota part)
#   QUOTA       default "0.1 0.15"  CPUs of each instance's quota (quota part)
#   QUOTA_CLIENTS default 64  clients of the one instance (three get 3x)
#   QUOTA_DUR   default 10   seconds of each quota run
#   QUOTA_DB_CONNS default 8 DB_MAX_CONNS of each instance in the quota part
#   QUOTA_USE   default 0.9  least share of its quota each instance must use
#   MIN_IDLE    default 0.15 least share of the machine's CPU time left idle
#   OUT         default ${TMPDIR:-/tmp}/bench-loadgen (binaries, logs, JSON)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pg="${PGURL_BASE:-postgres://postgres@127.0.0.1:5432}"
redis_url="${REDIS_URL:-redis://127.0.0.1:6379/0}"
reps="${REPS:-2}"
dur="${DUR:-8}"
clients="${CLIENTS:-64}"
delay="${DELAY:-50ms}"
bookings="${BOOKINGS:-5000}"
par_reqs="${PAR_REQS:-3000}"
port0="${BASE_PORT:-18081}"
out="${OUT:-${TMPDIR:-/tmp}/bench-loadgen}"
parts=" ${PARTS:-1 2 3} "
mkdir -p "$out"
results="$out/results.tsv"
: >"$results"

suffix="$$"
db="seatlock_bench_$suffix" # and one database per binary: ${db}_0, ${db}_1...
pgbench_db="pgbench_bench_$suffix"
pids=()
apis=()
cg_made=()  # the cgroups the quota part made, removed at the end
cgroups=() # the quota part's cgroup directories, one per instance

cleanup() {
	local pid
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	pids=()
	local i
	for ((i = 0; i < ${#apis[@]}; i++)); do
		dropdb -h 127.0.0.1 -U postgres --if-exists "${db}_$i" 2>/dev/null || true
	done
	dropdb -h 127.0.0.1 -U postgres --if-exists "$pgbench_db" 2>/dev/null || true
	local cg
	for cg in "${cg_made[@]}"; do rmdir "$cg" 2>/dev/null || echo "bench-loadgen.sh: could not remove cgroup $cg" >&2; done
}
trap cleanup EXIT

echo "building into $out" >&2
(cd "$root" && go build -o "$out/api" ./cmd/api && go build -o "$out/loadgen" ./cmd/loadgen)
lg="$out/loadgen"

# start_apis BINARY N [ENV...]: start N instances on consecutive ports and
# wait for /healthz; sets $targets.
start_apis() {
	local bin="$1" n="$2" i port wrap
	shift 2
	targets=""
	for ((i = 0; i < n; i++)); do
		port=$((port0 + i))
		# With cgroups set (the quota part), instance i starts inside
		# cgroups[i]: a shell joins it, then becomes the API.
		wrap=()
		[[ -n ${cgroups[i]:-} ]] && wrap=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "${cgroups[i]}")
		"${wrap[@]}" env "$@" ADDR="127.0.0.1:$port" REDIS_URL="$redis_url" DEMO_MODE=false \
			"$bin" >"$out/api-$port.log" 2>&1 &
		pids+=($!)
		targets+="${targets:+,}http://127.0.0.1:$port"
	done
	for ((i = 0; i < n; i++)); do
		port=$((port0 + i))
		for _ in $(seq 300); do
			curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
			sleep 0.1
		done
	done
}

stop_apis() {
	local pid
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	pids=()
}

# record PART NAME VALUE: one measurement, with the load average.
record() {
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$results" >&2
}

# ticks PID...: user + system CPU time the processes have used, in clock
# ticks, one "pid ticks" line each (processes gone are left out).
# One awk for all of them, the files read by the shell: on a machine where
# starting a process is slow, an awk per process took 4.7 s for pgbench's
# 64 backends, longer than the window it was to measure.
ticks() {
	local pid stat
	for pid; do
		read -r stat 2>/dev/null </proc/"$pid"/stat && printf '%s %s\n' "$pid" "$stat" # a process that has ended is left out
	done | awk '{p = $1; sub(/^[0-9]+ [0-9]+ \(.*\) /, ""); print p, $12 + $13}'
	return 0
}

# switches PID...: the context switches of the processes' threads so far,
# voluntary and not (each voluntary one is a thread going to sleep: a
# wake-up later), one "pid count" line each.
switches() {
	local pid
	for pid; do
		cat /proc/"$pid"/task/*/status 2>/dev/null | awk -v p="$pid" '/ctxt_switches/ {n += $2} END {if (n) print p, n}' || true
	done
	return 0
}

# syscalls PID...: the read and write system calls of the processes so
# far (reads and writes of sockets among them), one "pid count" line each.
syscalls() {
	local pid
	for pid; do
		awk -v p="$pid" '/^sysc[rw]:/ {n += $2} END {if (n) print p, n}' /proc/"$pid"/io 2>/dev/null || true
	done
	return 0
}

# backends DB: the pids of the Postgres backends connected to DB, from
# their process titles ("postgres: 15/main: USER DB HOST(PORT) STATE"):
# with pgbench's 64 connections open, psql may find no connection left.
backends() {
	ps -eo pid=,args= | awk -v db="$1" '$2 == "postgres:" && ($4 == db || $5 == db) {print $1}'
}

# cpu_us BEFORE AFTER: microseconds of CPU between two ticks listings; a
# process missing from BEFORE started since, from 0.
cpu_us() {
	awk -v hz="$(getconf CLK_TCK)" 'FILENAME == ARGV[1] {t[$1] = $2; next} {sum += $2 - t[$1]} END {printf "%.0f", sum * 1e6 / hz}' "$1" "$2"
}

# redis_stats: "name value" lines from the Redis server's INFO: the
# commands it ran (those a script calls included) and their usec, the
# reads it processed (about one per round trip: a pipeline is read at
# once), its own CPU time in microseconds, and the calls of the commands a
# booking runs.
redis_stats() {
	redis-cli -u "$redis_url" INFO all | tr -d '\r' | awk -F'[:,=]' '
		/^cmdstat_/ {calls += $3; usec += $5; c[substr($1, 9)] = $3}
		/^total_reads_processed:/ {reads = $2}
		/^used_cpu_(sys|user):/ {cpu += $2 * 1e6}
		END {
			print "calls", calls + 0; print "usec", usec + 0; print "reads", reads + 0; printf "cpu-us %.0f\n", cpu
			split("evalsha publish set get incr del time", names, " ")
			for (i = 1; i in names; i++) print names[i] "-calls", c[names[i]] + 0
		}'
}

# machine_ticks: the whole machine's busy and idle CPU, in clock ticks,
# from /proc/stat: what the other engineers' processes took is busy minus
# ours.
machine_ticks() {
	awk '$1 == "cpu" {print "busy", $2 + $3 + $4 + $7 + $8; print "idle", $5 + $6}' /proc/stat
}

# counters DB WHEN: the CPU ticks, context switches and syscalls of the API
# instances ($pids) and of DB's Postgres backends, and the Redis server's
# stats, each in $out/<what>.WHEN (WHEN: before or after a run).
counters() {
	local bdb="$1" when="$2"
	ticks "${pids[@]}" >"$out/api.$when"
	ticks $(backends "$bdb") >"$out/pg.$when"
	redis_stats >"$out/redis.$when"
	switches "${pids[@]}" >"$out/api-sw.$when"
	switches $(backends "$bdb") >"$out/pg-sw.$when"
	syscalls "${pids[@]}" >"$out/api-sc.$when"
	syscalls $(backends "$bdb") >"$out/pg-sc.$when"
}

# xact_commits DB: the transactions committed in DB so far. Backends report
# theirs at the latest when they exit, so read it with no API running.
xact_commits() {
	sleep 0.5 # the backends of the run just stopped report as they exit
	psql -h 127.0.0.1 -U postgres -d postgres -Atc "SELECT xact_commit FROM pg_stat_database WHERE datname = '$1'"
}

# pg_counters: "name value" lines of what the whole Postgres server did so
# far: WAL records and full-page images (pg_stat_wal), and the MultiXact
# SLRU pages read or created (pg_stat_slru: a MultiXact is made when a
# second transaction locks a row another one still holds). They count
# every database of the server: other clients of it add to them.
pg_counters() {
	psql -h 127.0.0.1 -U postgres -d postgres -AtF' ' -c "
		SELECT 'wal-records', wal_records FROM pg_stat_wal
		UNION ALL SELECT 'wal-fpi', wal_fpi FROM pg_stat_wal
		UNION ALL SELECT 'multixact-pages', sum(blks_hit + blks_read + blks_zeroed)::bigint
			FROM pg_stat_slru WHERE name IN ('MultiXactMember', 'MultiXactOffset')
		UNION ALL SELECT 'subtrans-pages', sum(blks_hit + blks_read + blks_zeroed)::bigint
			FROM pg_stat_slru WHERE name = 'Subtrans'"
}

# loadgen_run PART NAME FIELD ARGS...: run loadgen with -json, keep the JSON,
# record FIELD (a jq path) of the report. A verification failure aborts.
loadgen_run() {
	local part="$1" name="$2" field="$3" file
	shift 3
	file="$out/$part-${name//[^a-zA-Z0-9_.-]/_}-$(date +%s%N).json"
	"$lg" -json "$@" >"$file"
	record "$part" "$name" "$(jq -r "$field" "$file")"
}

uptime >&2
if [[ $parts == *" 1 "* ]]; then
	echo "== 1. generation: GET /healthz, $clients connections, ${dur}s" >&2
	start_apis "$out/api" 1
	# cpu_per_req PART NAME TIMEFILE REQUESTS: record the generator's own CPU
	# time (user + system, from /usr/bin/time) per request, in microseconds: a
	# figure that the other processes on the machine disturb less than a rate.
	cpu_per_req() {
		record "$1" "$2" "$(awk -v n="$4" '{printf "%.1f", ($1 + $2) * 1e6 / n}' "$3")"
	}
	for ((r = 1; r <= reps; r++)); do
		/usr/bin/time -f '%U %S' -o "$out/wrk.time" \
			wrk -t2 -c"$clients" -d"${dur}s" "http://127.0.0.1:$port0/healthz" >"$out/wrk.txt"
		record gen wrk "$(awk '/Requests\/sec/ {print $2}' "$out/wrk.txt")"
		cpu_per_req gen wrk-cpu-us-per-req "$out/wrk.time" "$(awk '/requests in/ {print $1}' "$out/wrk.txt")"
		/usr/bin/time -f '%U %S' -o "$out/loadgen.time" \
			"$lg" -json -targets "$targets" -scenario healthz -clients "$clients" -duration "${dur}s" >"$out/loadgen-healthz.json"
		record gen loadgen "$(jq -r .throughput_rps "$out/loadgen-healthz.json")"
		cpu_per_req gen loadgen-cpu-us-per-req "$out/loadgen.time" "$(jq -r .requests "$out/loadgen-healthz.json")"
	done
	stop_apis
fi

apis=("$out/api")
read -ra base_apis <<<"${BASE_API:-}"
apis+=("${base_apis[@]}")
# Results are named by the binaries' file names, so two of one name would
# be mixed in the medians (this tree's own binary is called api).
dup=$(for bin in "${apis[@]}"; do basename "$bin"; done | sort | uniq -d)
if [[ -n $dup ]]; then
	echo "bench-loadgen.sh: BASE_API: two binaries named $dup would share their results; copy one under another name" >&2
	exit 2
fi
# Each binary gets a database of its own, which it migrates: a tree that
# adds a migration must not run main's binary on its schema (main ignores
# migrations it does not know), nor main's on its own.
for ((i = 0; i < ${#apis[@]}; i++)); do
	createdb -h 127.0.0.1 -U postgres "${db}_$i"
done

if [[ $parts == *" 2 "* ]]; then
	echo "== 2. booking throughput: spread, default strategy, $clients clients" >&2
	createdb -h 127.0.0.1 -U postgres "$pgbench_db"
	pgbench -h 127.0.0.1 -U postgres -i -s 10 -q "$pgbench_db" >"$out/pgbench-init.log" 2>&1
	runs="1 3"
	[[ ${SHARE:-0} == 1 ]] && runs="1 share 3"
	for ((r = 1; r <= reps; r++)); do
		# The backends' CPU is sampled from the moment all are connected
		# (64 connections take a second or two on a loaded machine) to about 3s
		# before its end (they close at the end, and listing them takes a
		# while on a loaded machine), and divided by the transactions of
		# that window at the run's rate: pgbench's own connection set-up and
		# tear-down stay out. A window that lost backends is not recorded.
		pgbench -h 127.0.0.1 -U postgres -N -n -c "$clients" -j 2 -T "$dur" "$pgbench_db" >"$out/pgbench.txt" 2>&1 &
		pgb=$!
		sleep 1
		for _ in $(seq 20); do
			[[ $(backends "$pgbench_db" | wc -l) -ge $clients ]] && break
			sleep 0.1
		done
		ticks $(backends "$pgbench_db") >"$out/pg.before"
		t0=$(date +%s.%N)
		sleep $((dur - 5))
		ticks $(backends "$pgbench_db") >"$out/pg.after"
		t1=$(date +%s.%N)
		wait "$pgb"
		tps=$(awk '/^tps/ {print $3}' "$out/pgbench.txt")
		record tput pgbench-N "$tps"
		if [[ -s $out/pg.before && $(wc -l <"$out/pg.after") -eq $(wc -l <"$out/pg.before") ]]; then
			record cpu pgbench-N-postgres-us-per-tx "$(awk -v us="$(cpu_us "$out/pg.before" "$out/pg.after")" -v tps="$tps" -v t0="$t0" -v t1="$t1" 'BEGIN {printf "%.1f", us / (tps * (t1 - t0))}')"
		else
			echo "pgbench's backends changed during the CPU window; not recorded" >&2
		fi
		for ((i = 0; i < ${#apis[@]}; i++)); do
			bin="${apis[i]}" tag=$(basename "${apis[i]}") bdb="${db}_$i"
			dburl="$pg/$bdb?sslmode=disable"
			for run in $runs; do
				case $run in
				share) n=1 c=$((clients / 3)) label=x1-share ;;
				*) n=$run c=$clients label=x$run ;;
				esac
				commits0=$(xact_commits "$bdb")
				pg_counters >"$out/pgc.before"
				multi_env=()
				((n > 1)) && read -ra multi_env <<<"${MULTI_ENV:-}"
				start_apis "$bin" "$n" DATABASE_URL="$dburl" "${multi_env[@]}"
				counters "$bdb" before
				machine_ticks >"$out/machine.before"
				pin=()
				[[ ${PIN_CLIENTS:-1} == 1 ]] && pin=(-pin-clients)
				/usr/bin/time -f '%U %S' -o "$out/loadgen.time" \
					"$lg" -json -targets "$targets" "${pin[@]}" -scenario spread -clients "$c" -requests "$bookings" >"$out/tput.json"
				machine_ticks >"$out/machine.after"
				counters "$bdb" after
				stop_apis
				cp "$out/tput.json" "$out/tput-$tag-$label-$(date +%s%N).json"
				record tput "$tag-$label" "$(jq -r .confirmed_rps "$out/tput.json")"
				confirmed=$(jq -r .succeeded "$out/tput.json")
				per() { awk -v v="$1" -v n="$confirmed" 'BEGIN {printf "%.2f", v / n}'; }
				record cpu "$tag-$label-api-us-per-booking" "$(per "$(cpu_us "$out/api.before" "$out/api.after")")"
				for pid in $(awk '{print $1}' "$out/api.before"); do
					grep "^$pid " "$out/api.before" >"$out/one.before"
					grep "^$pid " "$out/api.after" >"$out/one.after" || true
					[[ -s $out/one.after ]] && echo "$(cpu_us "$out/one.before" "$out/one.after")"
				done | sort -n | awk '{v[NR] = $1} END {printf "%s %s\n", v[1], v[NR]}' >"$out/api.spread"
				if ((n > 1)); then
					record cpu "$tag-$label-api-min-instance-us-per-booking" "$(per "$(cut -d' ' -f1 "$out/api.spread")")"
					record cpu "$tag-$label-api-max-instance-us-per-booking" "$(per "$(cut -d' ' -f2 "$out/api.spread")")"
				fi
				record cpu "$tag-$label-postgres-us-per-booking" "$(per "$(cpu_us "$out/pg.before" "$out/pg.after")")"
				sw() { awk 'FILENAME == ARGV[1] {t[$1] = $2; next} {sum += $2 - t[$1]} END {print sum + 0}' "$1" "$2"; }
				record switches "$tag-$label-api-per-booking" "$(per "$(sw "$out/api-sw.before" "$out/api-sw.after")")"
				record switches "$tag-$label-postgres-per-booking" "$(per "$(sw "$out/pg-sw.before" "$out/pg-sw.after")")"
				record syscalls "$tag-$label-api-rw-per-booking" "$(per "$(sw "$out/api-sc.before" "$out/api-sc.after")")"
				record syscalls "$tag-$label-postgres-rw-per-booking" "$(per "$(sw "$out/pg-sc.before" "$out/pg-sc.after")")"
				record cpu "$tag-$label-loadgen-us-per-booking" "$(per "$(awk '{print ($1 + $2) * 1e6}' "$out/loadgen.time")")"
				paste "$out/redis.before" "$out/redis.after" | while read -r k a _ b; do
					record redis "$tag-$label-$k-per-booking" "$(per "$((b - a))")"
				done
				paste "$out/machine.before" "$out/machine.after" | while read -r k a _ b; do
					record machine "$tag-$label-$k-us-per-booking" "$(per "$(awk -v d="$((b - a))" -v hz="$(getconf CLK_TCK)" 'BEGIN {print d * 1e6 / hz}')")"
				done
				record pg "$tag-$label-commits-per-1000-bookings" "$(per "$((($(xact_commits "$bdb") - commits0) * 1000))")"
				pg_counters >"$out/pgc.after"
				paste "$out/pgc.before" "$out/pgc.after" | while read -r k a _ b; do
					record pg "$tag-$label-$k-per-1000-bookings" "$(per "$(((b - a) * 1000))")"
				done
			done
		done
	done
fi

if [[ $parts == *" 3 "* ]]; then
	echo "== 3. parallelism: spread, $clients clients, payment delay $delay" >&2
	for ((r = 1; r <= reps; r++)); do
		for ((i = 0; i < ${#apis[@]}; i++)); do
			bin="${apis[i]}" tag=$(basename "${apis[i]}")
			dburl="$pg/${db}_$i?sslmode=disable"
			for store in postgres memory; do
				if [[ $store == postgres ]]; then
					start_apis "$bin" 1 DATABASE_URL="$dburl"
				else
					start_apis "$bin" 1
				fi
				for lock in keyed redis keyed+redis global; do
					n="$par_reqs"
					[[ $lock == global ]] && n=200
					loadgen_run par "$tag-$store-$lock" .parallelism -targets "$targets" -scenario spread \
						-clients "$clients" -requests "$n" -payment-delay "$delay" -lock "$lock"
				done
				stop_apis
			done
		done
	done
fi
# The quota part: horizontal scale as on separate machines. Each instance
# runs in a CPU cgroup of its own whose quota stands for the machine it
# would have, with GOMAXPROCS=1; Postgres, Redis and loadgen are not
# limited. A figure counts only when every instance was throttled and used
# its quota (it, not the machine, was the limit) and the machine kept idle
# capacity; otherwise it is recorded under "invalid" and says why.

# cg_setup: find the cgroup version and check the script may use it.
cg_setup() {
	if [[ $(id -u) != 0 ]]; then
		echo "bench-loadgen.sh: the quota part puts each API instance in a CPU cgroup of its own and needs root" >&2
		exit 2
	fi
	if [[ -e /sys/fs/cgroup/cgroup.controllers ]]; then
		cg_root=/sys/fs/cgroup
		if ! grep -qw cpu "$cg_root/cgroup.subtree_control" && ! echo +cpu >"$cg_root/cgroup.subtree_control"; then
			echo "bench-loadgen.sh: could not enable the cpu controller for the cgroups under $cg_root" >&2
			exit 2
		fi
	elif [[ -e /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]]; then
		cg_root=/sys/fs/cgroup/cpu
	else
		echo "bench-loadgen.sh: no cgroup v2 cpu.max nor v1 cpu.cfs_quota_us under /sys/fs/cgroup" >&2
		exit 2
	fi
}

# cg_quota DIR CPUS: make the cgroup DIR (once) and give it CPUS of CPU time
# (0.15 = 15 ms in every 100 ms period).
cg_quota() {
	local us
	us=$(awk -v q="$2" 'BEGIN {printf "%d", q * 100000}')
	if [[ ! -d $1 ]]; then
		mkdir "$1"
		cg_made+=("$1")
	fi
	if [[ -e $1/cpu.max ]]; then
		echo "$us 100000" >"$1/cpu.max"
	else
		echo 100000 >"$1/cpu.cfs_period_us"
		echo "$us" >"$1/cpu.cfs_quota_us"
	fi
}

# throttled DIR...: the periods in which each cgroup ran out of its quota so far.
throttled() {
	local d
	for d; do awk -v d="$d" '$1 == "nr_throttled" {print d, $2}' "$d/cpu.stat"; done
}

# confirmed_of PORT: the bookings an instance confirmed since it started.
confirmed_of() {
	curl -fsS "http://127.0.0.1:$1/metrics" | awk '/^seatlock_bookings_total\{.*outcome="confirmed"/ {n += $NF} END {print n + 0}'
}

# quota_checks QUOTA T0 T1: the checks that make a run's figure one of the
# instances and not of the machine, each printed on stderr; prints on
# stdout why the run is invalid, nothing when it is valid. Every instance
# was throttled (nr_throttled grew) and used at least QUOTA_USE (0.9) of
# its quota over the run; the whole machine was idle at least MIN_IDLE
# (0.15) of the time (/proc/stat), so that Postgres, Redis and loadgen
# never waited for a core.
quota_checks() {
	local q="$1" wall hz i=0 pid thr0 thr1 use idle
	wall=$(awk -v a="$2" -v b="$3" 'BEGIN {print b - a}')
	hz=$(getconf CLK_TCK)
	while read -r pid _; do
		thr0=$(sed -n "$((i + 1))p" "$out/q-thr.before" | cut -d' ' -f2)
		thr1=$(sed -n "$((i + 1))p" "$out/q-thr.after" | cut -d' ' -f2)
		grep "^$pid " "$out/q-api.before" >"$out/one.before"
		grep "^$pid " "$out/q-api.after" >"$out/one.after" || true
		use=$(awk -v us="$(cpu_us "$out/one.before" "$out/one.after")" -v q="$q" -v w="$wall" 'BEGIN {printf "%.2f", us / (q * w * 1e6)}')
		echo "  instance $i: throttled in $((thr1 - thr0)) periods, used $use of its quota" >&2
		((thr1 > thr0)) || echo "instance $i was never throttled;"
		awk -v u="$use" -v m="${QUOTA_USE:-0.9}" 'BEGIN {exit !(u < m)}' && echo "instance $i used $use of its quota;"
		i=$((i + 1))
	done <"$out/q-confirmed"
	idle=$(paste "$out/q-machine.before" "$out/q-machine.after" | awk '{d[$1] = $4 - $2} END {printf "%.2f", d["idle"] / (d["idle"] + d["busy"])}')
	echo "  machine idle $idle of the run (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
	awk -v i="$idle" -v m="${MIN_IDLE:-0.15}" 'BEGIN {exit !(i < m)}' && echo "the machine was idle only $idle of the time;"
	return 0
}

# quota_run BIN TAG DB QUOTA N CLIENTS: one run of N instances, each under
# QUOTA, driven by CLIENTS pinned clients for $qdur seconds; records its
# figures, sets $rps to its bookings/s and $valid to 1 when it counts.
quota_run() {
	local bin="$1" tag="$2" bdb="$3" q="$4" n="$5" c="$6" i label part=quota why="" t0 t1 commits0 confirmed
	label="$tag-q$q-x$n"
	cgroups=()
	for ((i = 0; i < n; i++)); do
		cg_quota "$cg_root/seatlock-bench-$suffix-$i" "$q"
		cgroups+=("$cg_root/seatlock-bench-$suffix-$i")
	done
	commits0=$(xact_commits "$bdb")
	start_apis "$bin" "$n" DATABASE_URL="$pg/$bdb?sslmode=disable" GOMAXPROCS=1 DB_MAX_CONNS="${QUOTA_DB_CONNS:-8}"
	ticks "${pids[@]}" >"$out/q-api.before"
	switches "${pids[@]}" >"$out/q-sw.before"
	ticks $(backends "$bdb") >"$out/q-pg.before"
	redis_stats >"$out/q-redis.before"
	machine_ticks >"$out/q-machine.before"
	throttled "${cgroups[@]}" >"$out/q-thr.before"
	t0=$(date +%s.%N)
	"$lg" -json -targets "$targets" -pin-clients -scenario spread -clients "$c" -duration "${qdur}s" >"$out/q.json"
	t1=$(date +%s.%N)
	throttled "${cgroups[@]}" >"$out/q-thr.after"
	machine_ticks >"$out/q-machine.after"
	redis_stats >"$out/q-redis.after"
	ticks $(backends "$bdb") >"$out/q-pg.after"
	ticks "${pids[@]}" >"$out/q-api.after"
	switches "${pids[@]}" >"$out/q-sw.after"
	for ((i = 0; i < n; i++)); do echo "${pids[i]} $(confirmed_of $((port0 + i)))"; done >"$out/q-confirmed"
	stop_apis
	cgroups=()
	cp "$out/q.json" "$out/quota-$label-$(date +%s%N).json"
	confirmed=$(jq -r .succeeded "$out/q.json")
	per() { awk -v v="$1" -v n="$confirmed" 'BEGIN {printf "%.2f", v / n}'; }
	why=$(quota_checks "$q" "$t0" "$t1")
	[[ -n $why ]] && part=invalid && echo "INVALID $label: $why" >&2
	rps=$(jq -r .confirmed_rps "$out/q.json")
	record "$part" "$label-rps" "$rps"
	record "$part" "$label-api-us-per-booking" "$(per "$(cpu_us "$out/q-api.before" "$out/q-api.after")")"
	while read -r pid bookings; do
		grep "^$pid " "$out/q-api.before" >"$out/one.before"
		grep "^$pid " "$out/q-api.after" >"$out/one.after" || true
		awk -v us="$(cpu_us "$out/one.before" "$out/one.after")" -v n="$bookings" 'BEGIN {if (n > 0) printf "%.1f\n", us / n}'
	done <"$out/q-confirmed" | sort -n | awk '{v[NR] = $1} END {print v[1], v[NR]}' >"$out/q-api.spread"
	record "$part" "$label-api-min-instance-us-per-booking" "$(cut -d' ' -f1 "$out/q-api.spread")"
	record "$part" "$label-api-max-instance-us-per-booking" "$(cut -d' ' -f2 "$out/q-api.spread")"
	record "$part" "$label-api-switches-per-booking" "$(per "$(awk 'FILENAME == ARGV[1] {t[$1] = $2; next} {sum += $2 - t[$1]} END {print sum + 0}' "$out/q-sw.before" "$out/q-sw.after")")"
	record "$part" "$label-postgres-us-per-booking" "$(per "$(cpu_us "$out/q-pg.before" "$out/q-pg.after")")"
	record "$part" "$label-commits-per-1000-bookings" "$(per "$((($(xact_commits "$bdb") - commits0) * 1000))")"
	paste "$out/q-redis.before" "$out/q-redis.after" | awk '$1 == "reads" {print $4 - $2}' >"$out/q-reads"
	record "$part" "$label-redis-round-trips-per-booking" "$(per "$(cat "$out/q-reads")")"
	valid=1
	[[ -z $why ]] || valid=0
}

if [[ $parts == *" quota "* ]]; then
	cg_setup
	read -ra quotas <<<"${QUOTA:-0.1 0.15}"
	qdur="${QUOTA_DUR:-10}"
	qclients="${QUOTA_CLIENTS:-64}"
	echo "== quota: one instance with $qclients clients against three with $((3 * qclients)), each in a cgroup ($cg_root) of ${quotas[*]} CPU, GOMAXPROCS=1, ${qdur}s" >&2
	for ((r = 1; r <= reps; r++)); do
		# Each round runs one configuration, the other twice, then the
		# first again (ABBA), and takes the efficiency from the means: a
		# machine whose speed drifts during the round (a shared host's
		# can: the API's and Postgres's CPU per booking then move
		# together) moves both sides of the ratio alike. The rounds alternate which one comes first.
		order="1 3 3 1"
		((r % 2 == 0)) && order="3 1 1 3"
		for q in "${quotas[@]}"; do
			for ((i = 0; i < ${#apis[@]}; i++)); do
				tag=$(basename "${apis[i]}")
				declare -A got=([1]=0 [3]=0)
				part=quota
				for n in $order; do
					quota_run "${apis[i]}" "$tag" "${db}_$i" "$q" "$n" $((n * qclients))
					got[$n]=$(awk -v s="${got[$n]}" -v v="$rps" 'BEGIN {print s + v}')
					((valid)) || part=invalid
				done
				[[ $part == invalid ]] && echo "round $r at $q CPU: the efficiency is invalid, a run was" >&2
				# Both configurations ran twice: the ratio of the sums is that of the means.
				record "$part" "$tag-q$q-efficiency" "$(awk -v a="${got[1]}" -v b="${got[3]}" 'BEGIN {printf "%.3f", b / (3 * a)}')"
				unset got
			done
		done
	done
fi

uptime >&2

echo "== medians (part, name, median, n, values, load averages seen)" >&2
jq -Rrs '
	split("\n") | map(select(length > 0) | split("\t")) | group_by(.[0] + " " + .[1]) | .[]
	| (map(.[2] | tonumber) | sort) as $v | ($v | length) as $n
	| (if $n % 2 == 1 then $v[($n - 1) / 2] else ($v[$n / 2 - 1] + $v[$n / 2]) / 2 end) as $med
	| [.[0][0], .[0][1], ($med * 100 | round / 100 | tostring), "n=\($n)",
	   ($v | map(. * 10 | round / 10 | tostring) | join(",")), "load " + (map(.[3]) | join(","))]
	| join("\t")' "$results"
