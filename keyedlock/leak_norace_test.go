//go:build !race

package keyedlock_test

// distinctKeys is how many different keys TestNoLeakAfterManyDistinctKeys
// locks.
const distinctKeys = 1_000_000
