#!/usr/bin/env bash
# Lab 8 (docs/workshop/08-observing.md): lock wait and hold times in the
# metrics, and one table comparing every strategy.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/08-observing.md

lab_build # lab
DB=$(lab_db) # lab
API=$(lab_start api DATABASE_URL="$DB" DEMO_MODE=true) # lab

"$BIN/loadgen" -targets "$API" -scenario hot -seats 4 -clients 16 -requests 400 -lock keyed+redis -payment-delay 20ms >/dev/null # lab
curl -s "$API/metrics" | grep -E '^seatlock_lock_(wait|hold)_seconds_(sum|count)' | tee "$LAB_DIR/metrics.txt" # lab
lab_expect "$LAB_DIR/metrics.txt" '^seatlock_lock_wait_seconds_count\{layer="redis",outcome="acquired"\} [1-9]' "lock waits counted"
lab_expect "$LAB_DIR/metrics.txt" '^seatlock_lock_hold_seconds_count\{layer="redis"\} [1-9]' "lock holds counted"
curl -s "$API/metrics" | grep -E '^seatlock_bookings_total' | tee "$LAB_DIR/bookings.txt" # lab
lab_expect "$LAB_DIR/bookings.txt" 'outcome="confirmed",strategy="keyed\+redis"\} 4$' "4 confirmed bookings"

"$BIN/loadgen" compare -targets "$API" -scenario spread -clients 16 -requests 200 -payment-delay 10ms -html "$LAB_DIR/compare.html" | tee "$LAB_DIR/compare.txt" # lab
lab_expect "$LAB_DIR/compare.txt" '^global/fence ' "global in the table"
lab_expect "$LAB_DIR/compare.txt" '^keyed\+redis/fence ' "keyed+redis in the table"
ls -l "$LAB_DIR/compare.html" # lab
[ -s "$LAB_DIR/compare.html" ]
echo "lab 8 passed"
