#!/usr/bin/env bash
# Lab 6 (docs/workshop/06-leases-fencing.md): a payment longer than the
# lease survives thanks to the watchdog; a paused holder loses its lock to
# another instance and its late write is refused; the fencing example.
set -eu
cd "$(dirname "$0")/../../.."
source docs/workshop/labs/lib.sh
trap 'lab_cleanup; rm -rf "$LAB_DIR"' EXIT
lab_check_sync docs/workshop/labs/06.sh docs/workshop/06-leases-fencing.md

lab_build # lab
DB=$(lab_db) # lab
API1=$(lab_start api1 DATABASE_URL="$DB" LOCK_TTL=1s) # lab
API2=$(lab_start api2 DATABASE_URL="$DB" LOCK_TTL=1s) # lab
S=$(curl -s -X POST "$API1/v1/screenings" -d '{"movie":"Lease","rows":1,"seats_per_row":5,"lock":"redis","payment_delay_ms":3000}' | jq -r .id) # lab
echo "$S" # lab
[ -n "$S" ] && [ "$S" != null ] || { echo "FAIL: no screening created" >&2; exit 1; }

# The watchdog: a 3 s payment under a 1 s lease.
curl -s -w '%{http_code}\n' -X POST "$API1/v1/screenings/$S/bookings" -d '{"seats":["A1"],"customer":"ann"}' >"$LAB_DIR/a1.txt" & # lab
sleep 2 # lab
redis-cli -u "$REDIS_URL" pttl "seatlock:lock:{$S}:A1" | tee "$LAB_DIR/pttl.txt" # lab
wait # lab
cat "$LAB_DIR/a1.txt" # lab
lab_expect "$LAB_DIR/pttl.txt" '^[1-9][0-9]*$' "the lock key outlives its 1 s lease (pttl > 0 after 2 s)"
lab_expect "$LAB_DIR/a1.txt" '"customer":"ann"' "the 3 s booking is ann's"
lab_expect "$LAB_DIR/a1.txt" '^201$' "the 3 s booking succeeds"

# The paused holder: ann's instance stops (think: a long GC pause) while
# it holds A2; bob's instance gets A2 once the lease runs out.
curl -s -w '%{http_code}\n' -X POST "$API1/v1/screenings/$S/bookings" -d '{"seats":["A2"],"customer":"ann"}' >"$LAB_DIR/ann.txt" & # lab
sleep 1 # lab
kill -STOP "$(lab_pid api1)" # lab
curl -s -w '%{http_code}\n' -X POST "$API2/v1/screenings/$S/bookings" -d '{"seats":["A2"],"customer":"bob"}' | tee "$LAB_DIR/bob.txt" # lab
kill -CONT "$(lab_pid api1)" # lab
wait # lab
cat "$LAB_DIR/ann.txt" # lab
curl -s "$API1/v1/screenings/$S/seats" | jq -c '.seats[] | select(.id == "A2")' | tee "$LAB_DIR/a2.txt" # lab
lab_expect "$LAB_DIR/bob.txt" '^201$' "bob gets A2 while ann is paused"
lab_expect "$LAB_DIR/ann.txt" '^(409|503)$' "ann's late booking is refused"
bob=$(head -n 1 "$LAB_DIR/bob.txt" | jq -r .id)
lab_expect "$LAB_DIR/a2.txt" "\"booking_id\":\"$bob\"" "the map gives A2 to bob"
grep -E 'lost|stale|fenc' "$LAB_DIR/api1.log" | head -n 3 # lab

go test -count=1 -run 'ExampleRedis_Obtain_watchdog|ExampleLock_Token' -v ./distlock | tee "$LAB_DIR/examples.txt" # lab
lab_expect "$LAB_DIR/examples.txt" '^--- PASS: ExampleLock_Token' "the fencing example"
lab_expect "$LAB_DIR/examples.txt" '^ok ' "distlock examples pass"
echo "lab 6 passed"
