#!/usr/bin/env bash
# Lab 13 (docs/workshop/13-onsale.md): on-sale day, with and without a
# waiting room, across three instances.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/13-onsale.md

lab_build # lab
DB=$(lab_db) # lab
PAY=$(lab_payments) # lab
A=$(lab_start a DATABASE_URL="$DB" PAYMENT_URL="$PAY" DB_MAX_CONNS=8) # lab
B=$(lab_start b DATABASE_URL="$DB" PAYMENT_URL="$PAY" DB_MAX_CONNS=8) # lab
C=$(lab_start c DATABASE_URL="$DB" PAYMENT_URL="$PAY" DB_MAX_CONNS=8) # lab

curl -s -X POST "$A/v1/screenings" -H 'Content-Type: application/json' -d '{"id":"race","movie":"Premiere","rows":10,"seats_per_row":20,"hold_ttl_ms":5000}' | jq -c '{id, rows, seats_per_row, queue}' | tee "$LAB_DIR/race.json" # lab
curl -s -X POST "$A/v1/screenings" -H 'Content-Type: application/json' -d '{"id":"queue","movie":"Premiere","rows":10,"seats_per_row":20,"hold_ttl_ms":5000,"queue":{"admit_per_s":20}}' | jq -c '{id, rows, seats_per_row, queue}' | tee "$LAB_DIR/queue.json" # lab
lab_expect "$LAB_DIR/queue.json" '"admit_per_s":20' "the second screening has a waiting room"
echo "seat maps: $A/?screening=race and $A/?screening=queue" # lab

"$BIN/loadgen" -targets "$A,$B,$C" -scenario onsale -screening race -buyers 1000 -payment-delay 500ms -payments "$PAY" -seed 13 | tee "$LAB_DIR/race.txt" # lab
"$BIN/loadgen" -targets "$A,$B,$C" -scenario onsale -screening queue -buyers 1000 -payment-delay 500ms -payments "$PAY" -seed 13 | tee "$LAB_DIR/queued.txt" # lab

for run in race queued; do
	lab_expect "$LAB_DIR/$run.txt" '^sold out +after ' "$run: sold out"
	lab_expect "$LAB_DIR/$run.txt" '^confirmed seats +200 of 200 \(0 over capacity\)' "$run: 200 seats confirmed, none over"
	lab_expect "$LAB_DIR/$run.txt" '^double-booked seats +0$' "$run: nothing double-booked"
	lab_expect "$LAB_DIR/$run.txt" '^lost bookings +0$' "$run: nothing lost"
	lab_expect "$LAB_DIR/$run.txt" '^ledger .*balanced' "$run: the ledger balances"
	lab_expect "$LAB_DIR/$run.txt" '^result +(CLEAN|HARMED)' "$run: nothing that fails the run"
done
lab_expect "$LAB_DIR/queued.txt" '^fifo inversions +0$' "the waiting room admits in the order buyers joined"
lab_expect "$LAB_DIR/queued.txt" '^went home early +sold_out: [1-9]' "buyers still waiting at sell-out never reached the seats"
holds() { sed -nE 's/^hold requests +([0-9]+), .*/\1/p' "$1"; }
race=$(holds "$LAB_DIR/race.txt")
queued=$(holds "$LAB_DIR/queued.txt")
if [ "$queued" -ge "$race" ]; then
	echo "FAIL: $race hold requests without a waiting room, $queued with one: want fewer with one" >&2
	exit 1
fi
echo "ok: hold requests: $race without a waiting room, $queued with one"
echo "lab 13 passed"
