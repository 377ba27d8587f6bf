#!/usr/bin/env bash
# Lab 4 (docs/workshop/04-scale-out.md): three instances on one database.
# keyed with guard=off double-books across them; keyed+redis does not.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/04-scale-out.md

lab_build # lab
DB=$(lab_db) # lab
PAY=$(lab_payments) # lab
API1=$(lab_start api1 DATABASE_URL="$DB" DEMO_MODE=true PAYMENT_URL="$PAY") # lab
API2=$(lab_start api2 DATABASE_URL="$DB" DEMO_MODE=true PAYMENT_URL="$PAY") # lab
API3=$(lab_start api3 DATABASE_URL="$DB" DEMO_MODE=true PAYMENT_URL="$PAY") # lab
ALL="$API1,$API2,$API3" # lab

# The race needs two instances in one seat's critical section at once; with
# 24 clients on 8 seats and 50ms of payment it nearly always happens, and
# the check gives it three tries on a busy machine.
for try in 1 2 3; do
	"$BIN/loadgen" -targets "$ALL" -scenario hot -seats 8 -clients 24 -requests 200 -lock keyed -guard off -payment-delay 50ms | tee "$LAB_DIR/keyed.txt" # lab
	grep -qE '^double-booked seats +[1-9]' "$LAB_DIR/keyed.txt" && break
	echo "try $try: no double booking this time, again"
done
lab_expect "$LAB_DIR/keyed.txt" '^double-booked seats +[1-9]' "keyed across 3 instances double-books"

# The same race on the seat map's lock timeline: a screening made first,
# its events recorded, the load sent to it.
for try in 1 2 3; do
	K=$(curl -s -X POST "$API1/v1/screenings" -H 'Content-Type: application/json' -d '{"movie":"Watch","rows":1,"seats_per_row":8,"lock":"keyed","guard":"off","payment_delay_ms":50}' | jq -r .id) # lab
	lab_events "$API1" "$K" "$LAB_DIR/$K.events" # lab
	"$BIN/loadgen" -targets "$ALL" -screening "$K" -scenario hot -seats 8 -clients 24 -requests 200 | tee "$LAB_DIR/watch.txt" # lab
	lab_holders "$LAB_DIR/$K.events" A1 | tee "$LAB_DIR/watch-holders.txt" # lab
	grep -qE '^[2-9]$' "$LAB_DIR/watch-holders.txt" && break
	echo "try $try: A1 had one holder at a time this time, again"
done
lab_expect "$LAB_DIR/watch-holders.txt" '^[2-9]$' "the lock timeline: several instances had A1 locked at once"
R=$(curl -s -X POST "$API1/v1/screenings" -H 'Content-Type: application/json' -d '{"movie":"Watch","rows":1,"seats_per_row":8,"lock":"keyed+redis","guard":"off","payment_delay_ms":50}' | jq -r .id) # lab
lab_events "$API1" "$R" "$LAB_DIR/$R.events" # lab
"$BIN/loadgen" -targets "$ALL" -screening "$R" -scenario hot -seats 8 -clients 24 -requests 200 | tee "$LAB_DIR/watch-redis.txt" # lab
lab_holders "$LAB_DIR/$R.events" A1 | tee "$LAB_DIR/watch-redis-holders.txt" # lab
lab_expect "$LAB_DIR/watch-redis-holders.txt" '^1$' "the lock timeline with keyed+redis: one holder of A1 at a time"

"$BIN/loadgen" -targets "$ALL" -scenario hot -seats 8 -clients 24 -requests 200 -lock keyed+redis -guard off -payment-delay 50ms -payments "$PAY" | tee "$LAB_DIR/redis.txt" # lab
lab_expect "$LAB_DIR/redis.txt" '^double-booked seats +0$' "keyed+redis: no double booking"
lab_expect "$LAB_DIR/redis.txt" '^overlaps +0 ' "keyed+redis: no overlapping charge"
lab_expect "$LAB_DIR/redis.txt" '^result +CLEAN' "keyed+redis: result CLEAN"

# Exercise: keyed again, with the fenced write.
"$BIN/loadgen" -targets "$ALL" -scenario hot -seats 8 -clients 24 -requests 200 -lock keyed -guard fence -payment-delay 50ms -payments "$PAY" | tee "$LAB_DIR/fence.txt" # lab
lab_expect "$LAB_DIR/fence.txt" '^result +HARMED: OVERLAPS' "keyed+fence: the verdict names the overlapping charges"
lab_expect "$LAB_DIR/fence.txt" '^overlaps +[1-9]' "keyed+fence: overlapping charges across instances"
lab_expect "$LAB_DIR/fence.txt" '^payments +[0-9]+ charges, [1-9][0-9]* refunds' "keyed+fence: refunds"
echo "lab 4 passed"
