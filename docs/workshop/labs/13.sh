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

curl -s -X POST "$A/v1/screenings" -d '{"id":"race","movie":"Premiere","rows":10,"seats_per_row":20,"hold_ttl_ms":5000}' | jq -c '{id, rows, seats_per_row, queue}' | tee "$LAB_DIR/race.json" # lab
curl -s -X POST "$A/v1/screenings" -d '{"id":"queue","movie":"Premiere","rows":10,"seats_per_row":20,"hold_ttl_ms":5000,"queue":{"admit_per_s":100}}' | jq -c '{id, rows, seats_per_row, queue}' | tee "$LAB_DIR/queue.json" # lab
lab_expect "$LAB_DIR/queue.json" '"admit_per_s":100' "the second screening has a waiting room"
echo "seat maps: $A/?screening=race and $A/?screening=queue" # lab

"$BIN/loadgen" -targets "$A,$B,$C" -scenario onsale -screening race -buyers 1000 -payment-delay 500ms -payments "$PAY" -seed 13 | tee "$LAB_DIR/race.txt" # lab
"$BIN/loadgen" -targets "$A,$B,$C" -scenario onsale -screening queue -buyers 1000 -payment-delay 500ms -payments "$PAY" -seed 13 | tee "$LAB_DIR/queued.txt" # lab

for run in race queued; do
	lab_expect "$LAB_DIR/$run.txt" '^sold out +after ' "$run: sold out"
	lab_expect "$LAB_DIR/$run.txt" '^confirmed seats +200 of 200 \(0 over capacity\)' "$run: 200 seats confirmed, none over"
	lab_expect "$LAB_DIR/$run.txt" '^ledger .*balanced' "$run: the ledger balances"
	lab_expect "$LAB_DIR/$run.txt" '^result +CLEAN' "$run: result CLEAN"
done
lab_expect "$LAB_DIR/queued.txt" '^fifo inversions +0$' "the waiting room admits in arrival order"
lab_expect "$LAB_DIR/queued.txt" '^queue wait +p50 [0-9]' "buyers waited in the queue"
refused() { sed -nE 's/^hold requests +[0-9]+, ([0-9]+) refused.*/\1/p' "$1"; }
race=$(refused "$LAB_DIR/race.txt")
queued=$(refused "$LAB_DIR/queued.txt")
if [ "$race" -le $((2 * queued)) ]; then
	echo "FAIL: without a waiting room $race hold requests were refused, with one $queued: want more than twice as many" >&2
	exit 1
fi
echo "ok: refused hold requests: $race without a waiting room, $queued with one"
echo "lab 13 passed"
