#!/usr/bin/env bash
# Lab 10 (docs/workshop/10-redlock.md): Redlock across two instances with
# the payment provider counting overlaps; a paused Redlock holder whose late
# charge overlaps the next holder's, then the same pause refused by a
# provider that checks fencing tokens; the fenced write keeps the seat
# right in both.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/10-redlock.md

lab_build # lab
DB=$(lab_db) # lab
R1=$(lab_redis); R2=$(lab_redis); R3=$(lab_redis) # lab
PAY=$(lab_payments) # lab
ANNGATE=$(lab_gate anngate "$PAY") # lab
BOBGATE=$(lab_gate bobgate "$PAY") # lab
API1=$(lab_start api1 DATABASE_URL="$DB" REDLOCK_URLS="$R1,$R2,$R3" LOCK_TTL=1s PAYMENT_URL="$ANNGATE" DEMO_MODE=true) # lab
API2=$(lab_start api2 DATABASE_URL="$DB" REDLOCK_URLS="$R1,$R2,$R3" LOCK_TTL=1s PAYMENT_URL="$BOBGATE" DEMO_MODE=true) # lab

# Redlock as it is meant to run: no fault, two instances, hot seats.
"$BIN/loadgen" -targets "$API1,$API2" -scenario hot -seats 4 -clients 16 -requests 200 -lock redlock -payment-delay 20ms -payments "$PAY" | tee "$LAB_DIR/redlock.txt" # lab
lab_paid "$PAY" | tee "$LAB_DIR/stats-load.txt" # lab
lab_expect "$LAB_DIR/redlock.txt" '^double-booked seats +0$' "redlock: no double booking"
lab_expect "$LAB_DIR/redlock.txt" '^overlaps +0 ' "redlock: no overlapping charge"
lab_expect "$LAB_DIR/redlock.txt" '^payments +[1-9][0-9]* charges, 0 refunds' "redlock: charges, and nothing to refund"
lab_expect "$LAB_DIR/redlock.txt" '^succeeded +4$' "redlock: one booking per hot seat"
lab_expect "$LAB_DIR/redlock.txt" '^result +CLEAN' "redlock: result CLEAN"

# The paused holder: ann's charge and bob's both wait in their gates; bob's
# reaches the provider first, ann's while bob's is in progress.
S=$(curl -s -X POST "$API1/v1/screenings" -H 'Content-Type: application/json' -d '{"movie":"Redlock","rows":1,"seats_per_row":5,"lock":"redlock","payment_delay_ms":2000}' | jq -r .id) # lab
[ -n "$S" ] && [ "$S" != null ] || { echo "FAIL: no screening created" >&2; exit 1; }
lab_events "$API2" "$S" "$LAB_DIR/redlock.events" # lab
{ # lab
kill -USR1 "$(lab_pid anngate)"; kill -USR1 "$(lab_pid bobgate)" # lab
curl -s -w '%{http_code}\n' -X POST "$API1/v1/screenings/$S/bookings" -H 'Content-Type: application/json' -d '{"seats":["A1"],"customer":"ann"}' >"$LAB_DIR/ann.txt" & # lab
lab_wait_log anngate holding # lab
kill -STOP "$(lab_pid api1)" # lab
curl -s -w '%{http_code}\n' -X POST "$API2/v1/screenings/$S/bookings" -H 'Content-Type: application/json' -d '{"seats":["A1"],"customer":"bob"}' >"$LAB_DIR/bob.txt" & # lab
lab_wait_log bobgate holding # lab
kill -USR2 "$(lab_pid bobgate)"; sleep 0.5 # lab
kill -USR2 "$(lab_pid anngate)"; sleep 0.5 # lab
kill -CONT "$(lab_pid api1)" # lab
wait # lab
} # lab
cat "$LAB_DIR/ann.txt" "$LAB_DIR/bob.txt" # lab
lab_paid "$PAY" | tee "$LAB_DIR/stats.txt" # lab
curl -s "$API2/v1/screenings/$S/seats" | jq -c '.seats[] | select(.id == "A1")' | tee "$LAB_DIR/a1.txt" # lab
lab_holders "$LAB_DIR/redlock.events" A1 | tee "$LAB_DIR/holders.txt" # lab
lab_expect_answer "$LAB_DIR/bob.txt" 201 '"customer":"bob"' "bob books A1"
lab_expect_answer "$LAB_DIR/ann.txt" 409 '"code":"lock_lost"' "ann: 409 lock_lost"
lab_expect "$LAB_DIR/stats-load.txt" '"charges":4,"refunds":0,"overlaps":0,' "the load's counts: four charges, one per seat"
lab_expect "$LAB_DIR/stats.txt" '"charges":1,"refunds":0,"overlaps":1,"refused_stale":0,' "two Redlock holders charged for A1 at once (overlaps 1); ann's charge given up, so not made"
lab_expect "$LAB_DIR/holders.txt" '^2$' "the lock timeline: ann (paused) and bob had A1 locked at once"

bob=$(head -n 1 "$LAB_DIR/bob.txt" | jq -r .id)
lab_expect "$LAB_DIR/a1.txt" "\"booking_id\":\"$bob\"" "the fenced write keeps A1 bob's, and only bob's"
if grep -q '"bookings"' "$LAB_DIR/a1.txt"; then echo "FAIL: A1 has more than one live booking" >&2; exit 1; fi

# The same pause, against a provider that checks fencing tokens.
PAYF=$(lab_payments -check-fences) # lab
ANNGATE2=$(lab_gate anngate2 "$PAYF") # lab
BOBGATE2=$(lab_gate bobgate2 "$PAYF") # lab
API3=$(lab_start api3 DATABASE_URL="$DB" REDLOCK_URLS="$R1,$R2,$R3" LOCK_TTL=1s PAYMENT_URL="$ANNGATE2") # lab
API4=$(lab_start api4 DATABASE_URL="$DB" REDLOCK_URLS="$R1,$R2,$R3" LOCK_TTL=1s PAYMENT_URL="$BOBGATE2") # lab
{ # lab
kill -USR1 "$(lab_pid anngate2)"; kill -USR1 "$(lab_pid bobgate2)" # lab
curl -s -w '%{http_code}\n' -X POST "$API3/v1/screenings/$S/bookings" -H 'Content-Type: application/json' -d '{"seats":["A2"],"customer":"ann"}' >"$LAB_DIR/ann2.txt" & # lab
lab_wait_log anngate2 holding # lab
kill -STOP "$(lab_pid api3)" # lab
curl -s -w '%{http_code}\n' -X POST "$API4/v1/screenings/$S/bookings" -H 'Content-Type: application/json' -d '{"seats":["A2"],"customer":"bob"}' >"$LAB_DIR/bob2.txt" & # lab
lab_wait_log bobgate2 holding # lab
kill -USR2 "$(lab_pid bobgate2)"; sleep 0.5 # lab
kill -USR2 "$(lab_pid anngate2)"; sleep 0.5 # lab
kill -CONT "$(lab_pid api3)" # lab
wait # lab
} # lab
cat "$LAB_DIR/ann2.txt" "$LAB_DIR/bob2.txt" # lab
lab_paid "$PAYF" | tee "$LAB_DIR/stats2.txt" # lab
curl -s "$API4/v1/screenings/$S/seats" | jq -c '.seats[] | select(.id == "A2")' | tee "$LAB_DIR/a2.txt" # lab
lab_expect_answer "$LAB_DIR/bob2.txt" 201 '"customer":"bob"' "bob books A2"
lab_expect_answer "$LAB_DIR/ann2.txt" 409 '"code":"lock_lost"' "ann: 409 lock_lost"
lab_expect "$LAB_DIR/stats2.txt" '"charges":1,"refunds":0,"overlaps":0,"refused_stale":1,' "the provider refused ann's stale charge: no overlap, one charge"
bob=$(head -n 1 "$LAB_DIR/bob2.txt" | jq -r .id)
lab_expect "$LAB_DIR/a2.txt" "\"booking_id\":\"$bob\"" "A2 is bob's, and only bob's"
if grep -q '"bookings"' "$LAB_DIR/a2.txt"; then echo "FAIL: A2 has more than one live booking" >&2; exit 1; fi
echo "lab 10 passed"
