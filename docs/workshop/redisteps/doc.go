// Package redisteps holds the programs of workshop lab 5
// (docs/workshop/05-redis-lock.md): a Redis lock built up one step at a
// time, each step a small main package, a small diff of the one before.
// Every step runs five concurrent clients against the real Redis through
// a critical section that counts what happened (package contend), and
// prints a PASS or FAIL computed from those counts. The exercise of each
// failing step is to make its FAIL a PASS; the next step is the fix.
//
//	step1-setnx      SETNX: a crashed holder locks the seat for ever (FAIL)
//	step2-expire     SETNX then EXPIRE: a crash between the two does too (FAIL)
//	step3-set-nx-px  SET NX PX: a slow holder's DEL frees its successor's lock (FAIL)
//	step4-token      an owner token, checked with GET then DEL: a stall
//	                 between the two still frees another's lock (FAIL)
//	step5-lua        compare-and-delete in one script; a holder paused past
//	                 its lease still writes (FAIL)
//	step6-fencing    an INCR fencing token on acquire; the write refuses a
//	                 stale token (PASS)
//	step7-renewal    a watchdog extends the lease at TTL/3; the paused holder
//	                 keeps its seat (PASS)
//	step8-multi      every script over several keys: all seats or none (PASS);
//	                 the plain form of distlock/acquire.lua,
//	                 distlock/redis_lock.go and
//	                 distlock/internal/watchdog/watchdog.go
//
// Each reads REDIS_URL (default redis://127.0.0.1:6379/0), works on keys of
// its own ("workshop:<random>:...") and deletes them when it ends. The
// steps repeat each other on purpose: each is read whole, and diffed
// against the one before (diff step5-lua/main.go step6-fencing/main.go).
package redisteps
