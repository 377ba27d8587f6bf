#!/usr/bin/env bash
# Lab 9 (docs/workshop/09-beyond-locks.md): an idempotent retry, and a
# conditional write that is safe with no lock at all.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/09-beyond-locks.md

lab_build # lab
DB=$(lab_db) # lab
API=$(lab_start api DATABASE_URL="$DB" DEMO_MODE=true) # lab

curl -s -X POST "$API/v1/screenings/demo/bookings" -H 'Idempotency-Key: k-42' -H 'Content-Type: application/json' -d '{"seats":["D4"],"customer":"carol"}' | jq -r .id | tee "$LAB_DIR/first.txt" # lab
curl -s -X POST "$API/v1/screenings/demo/bookings" -H 'Idempotency-Key: k-42' -H 'Content-Type: application/json' -d '{"seats":["D4"],"customer":"carol"}' | jq -r .id | tee "$LAB_DIR/second.txt" # lab
[ -n "$(cat "$LAB_DIR/first.txt")" ] && [ "$(cat "$LAB_DIR/first.txt")" != null ] || { echo "FAIL: no booking id" >&2; exit 1; }
cmp "$LAB_DIR/first.txt" "$LAB_DIR/second.txt" && echo "ok: the retry returned the same booking"
curl -s -w '%{http_code}\n' -X POST "$API/v1/screenings/demo/bookings" -H 'Idempotency-Key: k-42' -H 'Content-Type: application/json' -d '{"seats":["D5"],"customer":"carol"}' | tee "$LAB_DIR/mismatch.txt" # lab
lab_expect "$LAB_DIR/mismatch.txt" '"code":"idempotency_mismatch"' "same key, other body: idempotency_mismatch"
lab_expect "$LAB_DIR/mismatch.txt" '^422$' "same key, other body: 422"
curl -s "$API/v1/screenings/demo/seats" | jq -c '[.seats[] | select(.status == "booked") | .id]' | tee "$LAB_DIR/booked.txt" # lab
lab_expect "$LAB_DIR/booked.txt" '^\["D4"\]$' "one seat booked, once"

"$BIN/loadgen" -targets "$API" -scenario hot -seats 4 -clients 16 -requests 400 -lock none -guard fence -payment-delay 20ms | tee "$LAB_DIR/fence.txt" # lab
lab_expect "$LAB_DIR/fence.txt" '^double-booked seats +0$' "no lock, fenced write: no double booking"
lab_expect "$LAB_DIR/fence.txt" '^result +CLEAN' "result CLEAN"
echo "lab 9 passed"
