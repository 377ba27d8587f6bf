#!/usr/bin/env bash
# Lab 6 (docs/workshop/06-leases-fencing.md): a payment longer than the
# lease survives thanks to the watchdog; a paused holder loses its lock to
# another instance and its late write is refused; without the guard both
# customers are confirmed and one silently loses the seat; a provider that
# checks fences refuses the paused holder's late charge; the fencing
# example.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/06-leases-fencing.md

lab_build # lab
DB=$(lab_db) # lab
API1=$(lab_start api1 DATABASE_URL="$DB" LOCK_TTL=1s) # lab
API2=$(lab_start api2 DATABASE_URL="$DB" LOCK_TTL=1s) # lab
S=$(curl -s -X POST "$API1/v1/screenings" -H 'Content-Type: application/json' -d '{"movie":"Lease","rows":1,"seats_per_row":5,"lock":"redis","payment_delay_ms":3000}' | jq -r .id) # lab
echo "$S" # lab
[ -n "$S" ] && [ "$S" != null ] || { echo "FAIL: no screening created" >&2; exit 1; }

# The watchdog: a 3 s payment under a 1 s lease.
{ # lab
curl -s -w '%{http_code}\n' -X POST "$API1/v1/screenings/$S/bookings" -H 'Content-Type: application/json' -d '{"seats":["A1"],"customer":"ann"}' >"$LAB_DIR/a1.txt" & # lab
sleep 2 # lab
redis-cli -u "$REDIS_URL" pttl "seatlock:lock:{$S}:A1" | tee "$LAB_DIR/pttl.txt" # lab
wait # lab
} # lab
cat "$LAB_DIR/a1.txt" # lab
lab_expect "$LAB_DIR/pttl.txt" '^[1-9][0-9]*$' "the lock key outlives its 1 s lease (pttl > 0 after 2 s)"
lab_expect "$LAB_DIR/a1.txt" '"customer":"ann"' "the 3 s booking is ann's"
lab_expect "$LAB_DIR/a1.txt" '^201$' "the 3 s booking succeeds"

# The paused holder: ann's instance stops (think: a long GC pause) while
# it holds A2; bob's instance gets A2 once the lease runs out.
{ # lab
curl -s -w '%{http_code}\n' -X POST "$API1/v1/screenings/$S/bookings" -H 'Content-Type: application/json' -d '{"seats":["A2"],"customer":"ann"}' >"$LAB_DIR/ann.txt" & # lab
sleep 1 # lab
kill -STOP "$(lab_pid api1)" # lab
curl -s -w '%{http_code}\n' -X POST "$API2/v1/screenings/$S/bookings" -H 'Content-Type: application/json' -d '{"seats":["A2"],"customer":"bob"}' | tee "$LAB_DIR/bob.txt" # lab
kill -CONT "$(lab_pid api1)" # lab
wait # lab
} # lab
cat "$LAB_DIR/ann.txt" # lab
curl -s "$API1/v1/screenings/$S/seats" | jq -c '.seats[] | select(.id == "A2")' | tee "$LAB_DIR/a2.txt" # lab
lab_expect "$LAB_DIR/bob.txt" '^201$' "bob gets A2 while ann is paused"
lab_expect "$LAB_DIR/ann.txt" '^(409|503)$' "ann's late booking is refused"
bob=$(head -n 1 "$LAB_DIR/bob.txt" | jq -r .id)
lab_expect "$LAB_DIR/a2.txt" "\"booking_id\":\"$bob\"" "the map gives A2 to bob"
grep -E 'lost|stale|fenc' "$LAB_DIR/api1.log" | head -n 3 # lab

# guard=off: ann's write is held in the database gate while api3 is
# stopped; nothing refuses it when it lands.
PAY=$(lab_payments -check-fences) # lab
DBGATE=$(lab_gate dbgate "$DB") # lab
PAYGATE=$(lab_gate paygate "$PAY") # lab
API3=$(lab_start api3 DATABASE_URL="$DBGATE" PAYMENT_URL="$PAYGATE" LOCK_TTL=1s DEMO_MODE=true RECONCILE_EVERY=1h) # lab
API4=$(lab_start api4 DATABASE_URL="$DB" PAYMENT_URL="$PAY" LOCK_TTL=1s DEMO_MODE=true) # lab
U=$(curl -s -X POST "$API4/v1/screenings" -H 'Content-Type: application/json' -d '{"movie":"Unguarded","rows":1,"seats_per_row":5,"lock":"redis","guard":"off","payment_delay_ms":2000}' | jq -r .id) # lab
[ -n "$U" ] && [ "$U" != null ] || { echo "FAIL: no guard=off screening created" >&2; exit 1; }
lab_events "$API4" "$U" "$LAB_DIR/off.events" # lab
{ # lab
curl -s -w '%{http_code}\n' -X POST "$API3/v1/screenings/$U/bookings" -H 'Content-Type: application/json' -d '{"seats":["A1"],"customer":"ann"}' >"$LAB_DIR/ann-off.txt" & # lab
sleep 1 # lab
kill -USR1 "$(lab_pid dbgate)" # lab
lab_wait_log dbgate holding # lab
kill -STOP "$(lab_pid api3)" # lab
curl -s -w '%{http_code}\n' -X POST "$API4/v1/screenings/$U/bookings" -H 'Content-Type: application/json' -d '{"seats":["A1"],"customer":"bob"}' | tee "$LAB_DIR/bob-off.txt" # lab
kill -CONT "$(lab_pid api3)" # lab
kill -USR2 "$(lab_pid dbgate)" # lab
wait # lab
} # lab
cat "$LAB_DIR/ann-off.txt" # lab
curl -s "$API4/v1/screenings/$U/seats" | jq -c '.seats[] | select(.id == "A1")' | tee "$LAB_DIR/a1-off.txt" # lab
lab_paid "$PAY" | tee "$LAB_DIR/stats-off.txt" # lab
lab_holders "$LAB_DIR/off.events" A1 | tee "$LAB_DIR/holders-off.txt" # lab
lab_expect_answer "$LAB_DIR/bob-off.txt" 201 '"customer":"bob"' "guard=off: bob gets 201"
lab_expect_answer "$LAB_DIR/ann-off.txt" 201 '"customer":"ann"' "guard=off: ann gets 201 too"
ann=$(head -n 1 "$LAB_DIR/ann-off.txt" | jq -r .id)
bob=$(head -n 1 "$LAB_DIR/bob-off.txt" | jq -r .id)
holder=$(jq -r .booking_id "$LAB_DIR/a1-off.txt")
if [ "$holder" = "$ann" ] || [ "$holder" = "$bob" ]; then
	echo "ok: the map gives A1 to one of them only ($([ "$holder" = "$ann" ] && echo ann || echo bob))"
else
	echo "FAIL: A1 is held by $holder, neither ann ($ann) nor bob ($bob)" >&2
	exit 1
fi
lab_expect "$LAB_DIR/a1-off.txt" "\"bookings\":\[\"[^\"]+\",\"[^\"]+\"\]" "A1 has two live bookings"
lab_expect "$LAB_DIR/holders-off.txt" '^2$' "the lock timeline: ann (paused) and bob had A1 locked at once"
lab_expect "$LAB_DIR/stats-off.txt" '"charges":2,"refunds":0,"overlaps":0,"refused_stale":0,' "both paid, nobody refunded, never at once"

# -check-fences: ann's charge is held in the payment gate while api3 is
# stopped and bob books; it reaches the provider after bob's.
S2=$(curl -s -X POST "$API4/v1/screenings" -H 'Content-Type: application/json' -d '{"movie":"Fenced","rows":1,"seats_per_row":5,"lock":"redis","payment_delay_ms":500}' | jq -r .id) # lab
[ -n "$S2" ] && [ "$S2" != null ] || { echo "FAIL: no screening created" >&2; exit 1; }
kill -USR1 "$(lab_pid paygate)" # lab
curl -s -w '%{http_code}\n' -X POST "$API3/v1/screenings/$S2/bookings" -H 'Content-Type: application/json' -d '{"seats":["A1"],"customer":"ann"}' >"$LAB_DIR/ann-late.txt" & # lab
lab_wait_log paygate holding # lab
kill -STOP "$(lab_pid api3)" # lab
curl -s -w '%{http_code}\n' -X POST "$API4/v1/screenings/$S2/bookings" -H 'Content-Type: application/json' -d '{"seats":["A1"],"customer":"bob"}' | tee "$LAB_DIR/bob-late.txt" # lab
kill -USR2 "$(lab_pid paygate)" # lab
sleep 1 # lab
kill -CONT "$(lab_pid api3)" # lab
wait # lab
cat "$LAB_DIR/ann-late.txt" # lab
lab_paid "$PAY" | tee "$LAB_DIR/stats-late.txt" # lab
lab_expect_answer "$LAB_DIR/bob-late.txt" 201 '"customer":"bob"' "bob books A1 while ann's charge waits"
lab_expect_answer "$LAB_DIR/ann-late.txt" 409 '"code":"lock_lost"' "ann: 409 lock_lost"
lab_expect "$LAB_DIR/stats-late.txt" '"charges":1,"refunds":0,"overlaps":0,"refused_stale":1,"voids":1' "the provider refused ann's stale charge: refused_stale 1, no overlap, nothing to refund"

# The stale write on a free seat: ann's write waits in the database gate
# while bob books A1 and cancels; the seat is free when her write lands,
# so the free-seat check passes, and only the token check refuses it.
F=$(curl -s -X POST "$API4/v1/screenings" -H 'Content-Type: application/json' -d '{"movie":"Freed","rows":1,"seats_per_row":5,"lock":"redis","payment_delay_ms":2000}' | jq -r .id) # lab
[ -n "$F" ] && [ "$F" != null ] || { echo "FAIL: no screening created for the freed seat" >&2; exit 1; }
{ # lab
curl -s -w '%{http_code}\n' -X POST "$API3/v1/screenings/$F/bookings" -H 'Content-Type: application/json' -d '{"seats":["A1"],"customer":"ann"}' >"$LAB_DIR/ann-freed.txt" & # lab
sleep 1 # lab
kill -USR1 "$(lab_pid dbgate)" # lab
lab_wait_log dbgate holding 2 # lab
kill -STOP "$(lab_pid api3)" # lab
curl -s -X POST "$API4/v1/screenings/$F/bookings" -H 'Content-Type: application/json' -d '{"seats":["A1"],"customer":"bob"}' | tee "$LAB_DIR/bob-freed.txt" # lab
curl -s -w '%{http_code}\n' -X DELETE "$API4/v1/bookings/$(jq -r .id "$LAB_DIR/bob-freed.txt")" -H "Authorization: Bearer $(jq -r .token "$LAB_DIR/bob-freed.txt")" | tee "$LAB_DIR/cancel-freed.txt" # lab
psql "$DB" -c "select seat, booking_id, fence from seats where screening_id = '$F'" | tee "$LAB_DIR/row-freed.txt" # lab
kill -CONT "$(lab_pid api3)" # lab
kill -USR2 "$(lab_pid dbgate)" # lab
wait # lab
} # lab
cat "$LAB_DIR/ann-freed.txt" # lab
curl -s "$API4/v1/screenings/$F/seats" | jq -c '.seats[] | select(.id == "A1")' | tee "$LAB_DIR/a1-freed.txt" # lab
lab_paid "$PAY" | tee "$LAB_DIR/stats-freed.txt" # lab
lab_expect "$LAB_DIR/cancel-freed.txt" '^204$' "bob cancels: A1 is free again"
lab_expect "$LAB_DIR/row-freed.txt" '^ A1 +\| +\| +[1-9][0-9]*$' "the seat row: no booking, bob's fence kept"
lab_expect_answer "$LAB_DIR/ann-freed.txt" 409 '"code":"lock_lost".*a newer lock holder has written these seats' "ann: 409 lock_lost by the token check alone"
lab_expect "$LAB_DIR/a1-freed.txt" '"status":"free"' "A1 is still free after ann's refused write"
lab_expect "$LAB_DIR/stats-freed.txt" '"charges":2,"refunds":2' "this step's charges (ann, bob) are both refunded (bob's cancel, ann's refusal)"

go run ./docs/workshop/showexample ./distlock ExampleRedis_Obtain_watchdog | tee "$LAB_DIR/watchdog.txt" # lab
lab_expect "$LAB_DIR/watchdog.txt" '^renewed: true$' "the watchdog renewed the lease"
lab_expect "$LAB_DIR/watchdog.txt" '^-- the same as its // Output: block$' "ExampleRedis_Obtain_watchdog prints its // Output: block"
go run ./docs/workshop/showexample ./distlock ExampleLock_Token | tee "$LAB_DIR/token.txt" # lab
lab_expect "$LAB_DIR/token.txt" '^ann writes with token 1: refused, the seat has seen 2$' "the storage refuses the stale token"
lab_expect "$LAB_DIR/token.txt" '^C7 belongs to bob$' "the fencing example"
lab_expect "$LAB_DIR/token.txt" '^-- the same as its // Output: block$' "ExampleLock_Token prints its // Output: block"
echo "lab 6 passed"
