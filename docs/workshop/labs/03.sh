#!/usr/bin/env bash
# Lab 3 (docs/workshop/03-keyed-lock.md): one mutex per seat is correct
# and parallel on one instance; the naive keyed mutex lets two holders in.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/03-keyed-lock.md

lab_build # lab
DB=$(lab_db) # lab
API=$(lab_start api DATABASE_URL="$DB" DEMO_MODE=true) # lab

"$BIN/loadgen" -targets "$API" -scenario spread -clients 16 -requests 200 -lock keyed -guard off -payment-delay 20ms | tee "$LAB_DIR/spread.txt" # lab
lab_expect "$LAB_DIR/spread.txt" '^result +CLEAN' "result CLEAN"
"$BIN/loadgen" -targets "$API" -scenario spread -clients 16 -requests 200 -lock global -guard off -payment-delay 20ms | tee "$LAB_DIR/spread-global.txt" # lab
p=$(lab_number "$LAB_DIR/spread.txt" parallelism)
g=$(lab_number "$LAB_DIR/spread-global.txt" parallelism)
# Relative, so that a loaded machine, which lowers both, cannot flip it.
awk -v p="$p" -v g="$g" 'BEGIN { exit !(p > 1.2 * g) }' || { echo "FAIL: keyed parallelism $p, want above global's $g" >&2; exit 1; }
echo "ok: keyed parallelism $p > global's $g"

"$BIN/loadgen" -targets "$API" -scenario hot -seats 4 -clients 16 -requests 400 -lock keyed -guard off -payment-delay 20ms | tee "$LAB_DIR/hot.txt" # lab
lab_expect "$LAB_DIR/hot.txt" '^double-booked seats +0$' "no double booking"
lab_expect "$LAB_DIR/hot.txt" '^result +CLEAN' "result CLEAN"

go run ./docs/workshop/showexample ./keyedlock Example | tee "$LAB_DIR/example.txt" # lab
lab_expect "$LAB_DIR/example.txt" '^bookings of C7: 1 refused: 3$' "Example prints its bookings"
lab_expect "$LAB_DIR/example.txt" '^keys still locked: 0$' "Example prints the keys left"
lab_expect "$LAB_DIR/example.txt" '^-- the same as its // Output: block$' "Example prints its // Output: block"
go run ./docs/workshop/showexample ./keyedlock ExampleMutex_LockAll | tee "$LAB_DIR/lockall.txt" # lab
lab_expect "$LAB_DIR/lockall.txt" '^C7 free\? false$' "ExampleMutex_LockAll prints what it holds"
lab_expect "$LAB_DIR/lockall.txt" '^-- the same as its // Output: block$' "ExampleMutex_LockAll prints its // Output: block"
go test -count=1 -timeout 60s -run Example ./keyedlock | tee "$LAB_DIR/examples.txt" # lab
lab_expect "$LAB_DIR/examples.txt" '^ok ' "keyedlock examples pass"

go test -count=1 -timeout 60s -run TestTwoHolders -v ./keyedlock/naive | tee "$LAB_DIR/naive.txt" # lab
lab_expect "$LAB_DIR/naive.txt" 'B and C both hold C7' "the naive mutex let two holders in"
lab_expect "$LAB_DIR/naive.txt" '^ok ' "naive test passes (it expects the bug)"

go run ./docs/workshop/showexample ./keyedlock ExampleMutex_naiveUnlock | tee "$LAB_DIR/refcount.txt" # lab
lab_expect "$LAB_DIR/refcount.txt" '^C gets C7 while B holds it: false$' "the same interleaving on keyedlock waits"
lab_expect "$LAB_DIR/refcount.txt" '^-- the same as its // Output: block$' "ExampleMutex_naiveUnlock prints its // Output: block"
# The two grades below fail, as the text says: the untouched code is graded.
GRADE=1 go test -count=1 -timeout 60s ./keyedlock/naive | tee "$LAB_DIR/grade-naive.txt" || true
lab_expect "$LAB_DIR/grade-naive.txt" 'B and C both hold C7: Unlock deleted the entry' "the grade of the unfixed naive mutex names the bug"
GRADE=1 go test -count=1 -timeout 2m ./docs/workshop/write/keyedlock | tee "$LAB_DIR/grade-keyed.txt" || true
lab_expect "$LAB_DIR/grade-keyed.txt" 'stage 1 of 3 \(1-exclusion\) failed' "the skeleton stops at stage 1"
echo "lab 3 passed"
