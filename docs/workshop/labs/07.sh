#!/usr/bin/env bash
# Lab 7 (docs/workshop/07-backends.md): every backend behind one interface,
# side by side: Postgres advisory locks, Redlock over three Redis servers,
# file locks, and ZooKeeper when it is installed.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/07-backends.md

lab_build # lab
DB=$(lab_db) # lab
R1=$(lab_redis); R2=$(lab_redis); R3=$(lab_redis) # lab
ZK=$(lab_zookeeper) || ZK="" # lab
[ -n "$ZK" ] || echo "no ZooKeeper: the zookeeper strategy is left out of this lab"
echo "redlock: $R1,$R2,$R3 zookeeper: ${ZK:-none}" # lab
API1=$(lab_start api1 DATABASE_URL="$DB" DEMO_MODE=true LOCK_DIR="$LAB_DIR/locks" REDLOCK_URLS="$R1,$R2,$R3" ZOOKEEPER_SERVERS="$ZK") # lab
API2=$(lab_start api2 DATABASE_URL="$DB" DEMO_MODE=true LOCK_DIR="$LAB_DIR/locks" REDLOCK_URLS="$R1,$R2,$R3" ZOOKEEPER_SERVERS="$ZK") # lab

"$BIN/loadgen" compare -targets "$API1,$API2" -scenario hot -seats 2 -clients 16 -requests 200 -payment-delay 10ms | tee "$LAB_DIR/compare.txt" # lab
for s in postgres redlock file ${ZK:+zookeeper}; do
	lab_expect "$LAB_DIR/compare.txt" "^$s/fence +[0-9]+ +[0-9]+ +0 +0 " "$s: no double booking, no lost booking"
done
if grep -E '^(postgres|redlock|file|zookeeper)/' "$LAB_DIR/compare.txt" | grep -qi refused; then
	echo "FAIL: a configured backend was refused" >&2; exit 1
fi

# Exercise: one of the three Redlock servers goes away.
redis-cli -u "$R3" shutdown nosave 2>/dev/null || true # lab
"$BIN/loadgen" -targets "$API1,$API2" -scenario hot -seats 2 -clients 16 -requests 200 -lock redlock -payment-delay 10ms | tee "$LAB_DIR/minority.txt" # lab
lab_expect "$LAB_DIR/minority.txt" '^result +CLEAN' "redlock survives a minority down"
echo "lab 7 passed"
