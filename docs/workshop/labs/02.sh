#!/usr/bin/env bash
# Lab 2 (docs/workshop/02-global-lock.md): one mutex for the whole process
# is correct (hot: clean) but serial (spread: parallelism about 1).
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/02-global-lock.md

lab_build # lab
DB=$(lab_db) # lab
API=$(lab_start api DATABASE_URL="$DB" DEMO_MODE=true) # lab

"$BIN/loadgen" -targets "$API" -scenario hot -seats 4 -clients 16 -requests 400 -lock global -guard off -payment-delay 20ms | tee "$LAB_DIR/hot.txt" # lab
lab_expect "$LAB_DIR/hot.txt" '^double-booked seats +0$' "no double booking"
lab_expect "$LAB_DIR/hot.txt" '^result +CLEAN' "result CLEAN"

"$BIN/loadgen" -targets "$API" -scenario spread -clients 16 -requests 200 -lock global -guard off -payment-delay 20ms | tee "$LAB_DIR/spread.txt" # lab
lab_expect "$LAB_DIR/spread.txt" '^result +CLEAN' "result CLEAN"
p=$(lab_number "$LAB_DIR/spread.txt" parallelism)
awk -v p="$p" 'BEGIN { exit !(p <= 1.05) }' || { echo "FAIL: global parallelism $p, want <= 1" >&2; exit 1; }
echo "ok: global parallelism $p <= 1"

# Exercise: how long must 200 bookings of 20ms take under one lock?
grep -E '^requests' "$LAB_DIR/spread.txt" # lab
s=$(grep -E '^requests' "$LAB_DIR/spread.txt" | sed -E 's/.* in ([0-9.]+)s$/\1/')
awk -v s="$s" 'BEGIN { exit !(s >= 3.9) }' || { echo "FAIL: 200 x 20ms took $s s, want >= 4 s" >&2; exit 1; }
echo "ok: the run took $s s >= 200 x 20ms"
echo "lab 2 passed"
