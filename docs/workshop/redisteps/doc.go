// Package redisteps holds the programs of workshop lab 5
// (docs/workshop/05-redis-lock.md): a Redis lock built up one step at a
// time, each step a small main package that shows what the step fixes and
// how it still fails.
//
//	step1-setnx      SETNX: a crashed holder blocks the key for ever
//	step2-expire     SETNX then EXPIRE: a crash between the two does too
//	step3-set-nx-px  SET NX PX: a slow holder deletes its successor's lock
//	step4-token      an owner token, checked with GET then DEL: the check
//	                 and the delete can still be interleaved
//	step5-lua        compare-and-delete in one Lua script: safe release
//
// Each reads REDIS_URL (default redis://127.0.0.1:6379/0), works on keys of
// its own ("workshop:<random>:C7") and deletes them when it ends. Package
// distlock is where the finished lock lives.
package redisteps
