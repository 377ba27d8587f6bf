#!/usr/bin/env bash
# Lab 0 (docs/workshop/00-setup.md): build, a fresh database, one instance,
# the seat map, a booking, a conflict, a cancellation.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/00-setup.md

lab_build # lab
DB=$(lab_db) # lab
API=$(lab_start api DATABASE_URL="$DB" DEMO_MODE=true) # lab
echo "$API" # lab

curl -s "$API/healthz" | tee "$LAB_DIR/healthz.json" # lab
lab_expect "$LAB_DIR/healthz.json" '"status":"ok"'

curl -s "$API/v1/screenings/demo/seats" | jq -c '.seats[:3]' | tee "$LAB_DIR/seats.json" # lab
lab_expect "$LAB_DIR/seats.json" '"id":"A1","row":"A","number":1,"status":"free"'

curl -s "$API/" | grep -o '<title>.*</title>' | tee "$LAB_DIR/title.txt" # lab
lab_expect "$LAB_DIR/title.txt" '<title>'

curl -s -X POST "$API/v1/screenings/demo/bookings" -H 'Content-Type: application/json' -d '{"seats":["C7","C8"],"customer":"alice"}' | tee "$LAB_DIR/alice.json" # lab
lab_expect "$LAB_DIR/alice.json" '"status":"confirmed"'
ID=$(jq -r .id "$LAB_DIR/alice.json") # lab
TOKEN=$(jq -r .token "$LAB_DIR/alice.json") # lab

curl -s -w '%{http_code}\n' -X POST "$API/v1/screenings/demo/bookings" -H 'Content-Type: application/json' -d '{"seats":["C8"],"customer":"bob"}' | tee "$LAB_DIR/bob.txt" # lab
lab_expect "$LAB_DIR/bob.txt" '"code":"seat_taken"'
lab_expect "$LAB_DIR/bob.txt" '^409$'

curl -s "$API/v1/screenings/demo/seats" | jq -c '.seats[] | select(.status == "booked") | .id' | tee "$LAB_DIR/booked.txt" # lab
lab_expect "$LAB_DIR/booked.txt" '"C7"'
lab_expect "$LAB_DIR/booked.txt" '"C8"'

curl -s -w '%{http_code}\n' -X DELETE "$API/v1/bookings/$ID" -H "Authorization: Bearer $TOKEN" | tee "$LAB_DIR/cancel.txt" # lab
lab_expect "$LAB_DIR/cancel.txt" '^204$'

# Exercise: cancel with a wrong token, then book C8 for bob again.
curl -s -w '%{http_code}\n' -X DELETE "$API/v1/bookings/$ID" -H "Authorization: Bearer nope" | tee "$LAB_DIR/wrong.txt" # lab
lab_expect "$LAB_DIR/wrong.txt" '^403$'
curl -s -w '%{http_code}\n' -X POST "$API/v1/screenings/demo/bookings" -H 'Content-Type: application/json' -d '{"seats":["C8"],"customer":"bob"}' | tee "$LAB_DIR/bob2.txt" # lab
lab_expect "$LAB_DIR/bob2.txt" '"customer":"bob"'
lab_expect "$LAB_DIR/bob2.txt" '^201$'
echo "lab 0 passed"
