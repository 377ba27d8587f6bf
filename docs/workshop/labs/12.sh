#!/usr/bin/env bash
# Lab 12 (docs/workshop/12-holds.md): locks around a payment against holds
# that expire by themselves, and best available under contention.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/12-holds.md

lab_build # lab
DB=$(lab_db) # lab
API=$(lab_start api DATABASE_URL="$DB" LOCK_WAIT=200ms) # lab

"$BIN/loadgen" -targets "$API" -scenario hot -seats 8 -clients 32 -requests 200 -payment-delay 300ms | tee "$LAB_DIR/locked.txt" # lab
lab_expect "$LAB_DIR/locked.txt" '^succeeded +8$' "every seat sold once"
lab_expect "$LAB_DIR/locked.txt" '^by code .*seat_busy: [1-9]' "locks around the payment: customers told seat_busy"
lab_expect "$LAB_DIR/locked.txt" '^result +CLEAN' "result CLEAN"

curl -s -X POST "$API/v1/screenings" -H 'Content-Type: application/json' -d '{"id":"lab12","movie":"Holds","rows":5,"seats_per_row":8,"hold_ttl_ms":2000}' >/dev/null # lab
{ # lab
curl -s -X POST "$API/v1/screenings/lab12/holds" -H 'Content-Type: application/json' -d '{"seats":["C4"],"customer":"ann"}' | tee "$LAB_DIR/hold.json" | jq -c '{seats, status, expires_at}' # lab
curl -s -w '%{http_code}\n' -X POST "$API/v1/screenings/lab12/bookings" -H 'Content-Type: application/json' -d '{"seats":["C4"],"customer":"bob"}' | tee "$LAB_DIR/bob.txt" # lab
curl -s "$API/v1/screenings/lab12/seats" | jq -c '.seats[] | select(.id == "C4") | {id, status, hold_expires_at}' | tee "$LAB_DIR/held-c4.txt" # lab
} # lab
lab_expect "$LAB_DIR/hold.json" '"status":"held"' "ann holds C4"
lab_expect_answer "$LAB_DIR/bob.txt" 409 '"code":"seat_held"' "bob is told seat_held at once"
lab_expect "$LAB_DIR/held-c4.txt" '"status":"held"' "the map shows C4 held"
lab_until 10 "C4's hold to expire" sh -c "curl -s $API/v1/screenings/lab12/seats | jq -r '.seats[] | select(.id == \"C4\" and .status == \"free\") | .id'" # lab
curl -s "$API/v1/screenings/lab12/seats" | jq -r '.seats[] | select(.id == "C4") | .status' | tee "$LAB_DIR/after.txt" # lab
lab_expect "$LAB_DIR/after.txt" '^free$' "the expired hold's seat is free, with nothing running"
curl -s -w '%{http_code}\n' -X POST "$API/v1/holds/$(jq -r .id "$LAB_DIR/hold.json")/confirm" -H "Authorization: Bearer $(jq -r .token "$LAB_DIR/hold.json")" | tee "$LAB_DIR/late.txt" # lab
lab_expect_answer "$LAB_DIR/late.txt" 409 '"code":"hold_expired"' "a late confirm is refused"

"$BIN/loadgen" -targets "$API" -scenario hold -clients 32 -requests 200 -payment-delay 300ms -abandon 0.25 -hold-ttl 2s | tee "$LAB_DIR/held.txt" # lab
if grep -q 'seat_busy' "$LAB_DIR/held.txt"; then echo "FAIL: holds answered seat_busy" >&2; exit 1; fi
echo "ok: with holds nobody is told seat_busy"
lab_expect "$LAB_DIR/held.txt" '^abandoned seats not freed +0 ' "abandoned holds' seats free again"
lab_expect "$LAB_DIR/held.txt" '^confirmed after expiry +0$' "no confirm after expiry"
lab_expect "$LAB_DIR/held.txt" '^result +CLEAN' "result CLEAN"

API2=$(lab_start api2 DATABASE_URL="$DB") # lab
"$BIN/loadgen" -targets "$API2" -scenario best -clients 64 -requests 5000 -payment-delay 50ms | tee "$LAB_DIR/best.txt" # lab
if grep -q 'seat_busy' "$LAB_DIR/best.txt"; then echo "FAIL: best available answered seat_busy" >&2; exit 1; fi
echo "ok: best available never told anybody seat_busy"
lab_expect "$LAB_DIR/best.txt" '^sold out +64 single-seat requests refused sold_out; 0 free seats left then' "sold out, no seat left free"
lab_expect "$LAB_DIR/best.txt" '^result +CLEAN' "result CLEAN"
p=$(lab_number "$LAB_DIR/best.txt" parallelism)
awk -v p="$p" 'BEGIN { exit !(p > 2) }' || { echo "FAIL: best available's parallelism $p, want above 2" >&2; exit 1; }
echo "ok: best available's parallelism $p > 2: payments ran side by side"
echo "lab 12 passed"
