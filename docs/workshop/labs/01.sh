#!/usr/bin/env bash
# Lab 1 (docs/workshop/01-race.md): no lock, no guard, a payment delay,
# hot seats: loadgen must report double bookings, and the map must show
# fewer bookings than customers were promised.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/01-race.md

lab_build # lab
DB=$(lab_db) # lab
API=$(lab_start api DATABASE_URL="$DB" DEMO_MODE=true) # lab

"$BIN/loadgen" -targets "$API" -scenario hot -seats 4 -clients 16 -requests 400 -lock none -guard off -payment-delay 20ms | tee "$LAB_DIR/race.txt" # lab
lab_expect "$LAB_DIR/race.txt" '^double-booked seats +[1-9]' "double-booked seats > 0"
lab_expect "$LAB_DIR/race.txt" '^result +FAILED' "result FAILED"

SCREENING=$(awk '/^screenings/ { print $2 }' "$LAB_DIR/race.txt") # lab
curl -s "$API/v1/screenings/$SCREENING/seats" | jq -c '.seats[] | select(.status == "booked") | {id, booking_id}' | tee "$LAB_DIR/map.txt" # lab
lab_expect "$LAB_DIR/map.txt" '"id":"A1","booking_id":"' "A1 booked by exactly one booking on the map"
[ "$(wc -l <"$LAB_DIR/map.txt")" -eq 4 ] || { echo "FAIL: want 4 booked seats on the map" >&2; exit 1; }

# What the customers paid: the fenced write alone, and a payment provider.
PAY=$(lab_payments) # lab
PAID=$(lab_start paid DATABASE_URL="$DB" DEMO_MODE=true PAYMENT_URL="$PAY") # lab
"$BIN/loadgen" -targets "$PAID" -scenario hot -seats 4 -clients 16 -requests 400 -lock none -guard fence -payment-delay 20ms -payments "$PAY" | tee "$LAB_DIR/paid.txt" # lab
lab_expect "$LAB_DIR/paid.txt" '^double-booked seats +0$' "none+fence: no double booking"
lab_expect "$LAB_DIR/paid.txt" '^overlaps +[1-9]' "none+fence: overlapping charges"
lab_expect "$LAB_DIR/paid.txt" '^payments +[0-9]+ charges, [1-9][0-9]* refunds' "none+fence: refunds"

# Exercise: the same run without the payment delay.
"$BIN/loadgen" -targets "$API" -scenario hot -seats 4 -clients 16 -requests 400 -lock none -guard off -payment-delay 0s | tee "$LAB_DIR/nodelay.txt" # lab
lab_expect "$LAB_DIR/nodelay.txt" '^double-booked seats +[0-9]+' "a report without delay (any count)"
echo "lab 1 passed"
