#!/usr/bin/env bash
# Lab 5 (docs/workshop/05-redis-lock.md): the Redis lock built step by
# step against the real Redis, each step's failure shown; then distlock's
# examples.
source "$(dirname "$0")/lib.sh" || exit
lab_script docs/workshop/05-redis-lock.md

echo "$REDIS_URL" # lab
go run ./docs/workshop/redisteps/step1-setnx | tee "$LAB_DIR/1.txt" # lab
lab_expect "$LAB_DIR/1.txt" '^B: SETNX false$' "B cannot take the key"
lab_expect "$LAB_DIR/1.txt" 'never expires \(TTL -1\): true' "and it never expires"

go run ./docs/workshop/redisteps/step2-expire | tee "$LAB_DIR/2.txt" # lab
lab_expect "$LAB_DIR/2.txt" 'never expires \(TTL -1\): true' "a crash between SETNX and EXPIRE"

go run ./docs/workshop/redisteps/step3-set-nx-px | tee "$LAB_DIR/3.txt" # lab
lab_expect "$LAB_DIR/3.txt" '^C: SET NX PX true$' "C gets in beside B"

go run ./docs/workshop/redisteps/step4-token | tee "$LAB_DIR/4.txt" # lab
lab_expect "$LAB_DIR/4.txt" '^C: SET NX PX with its token true$' "GET-then-DEL lets C in beside B"

go run ./docs/workshop/redisteps/step5-lua | tee "$LAB_DIR/5.txt" # lab
lab_expect "$LAB_DIR/5.txt" '^A: release script deleted 0 key$' "A's late release deletes nothing"
lab_expect "$LAB_DIR/5.txt" '^C: SET NX PX with its token false$' "C stays out"

cat distlock/internal/luascript/release.lua # lab
go run ./docs/workshop/showexample ./distlock Example | tee "$LAB_DIR/example.txt" # lab
lab_expect "$LAB_DIR/example.txt" '^next holder of C7 gets token 2$' "the next holder gets a higher token"
lab_expect "$LAB_DIR/example.txt" '^-- the same as its // Output: block$' "Example prints its // Output: block"
go run ./docs/workshop/showexample ./distlock ExampleRedis_TryObtain | tee "$LAB_DIR/tryobtain.txt" # lab
lab_expect "$LAB_DIR/tryobtain.txt" '^distlock: not acquired: "\{screening-42\}:C7" is held$' "TryObtain does not wait for a held seat"
lab_expect "$LAB_DIR/tryobtain.txt" '^-- the same as its // Output: block$' "ExampleRedis_TryObtain prints its // Output: block"
# The grade fails, as the text says: the untouched skeleton is graded.
GRADE=1 go test -count=1 -timeout 2m ./docs/workshop/write/redislock | tee "$LAB_DIR/grade-redis.txt" || true
lab_expect "$LAB_DIR/grade-redis.txt" 'stage 1 of 3 \(1-basics\) failed' "the skeleton stops at stage 1"
echo "lab 5 passed"
