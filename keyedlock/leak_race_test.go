//go:build race

package keyedlock_test

// distinctKeys is smaller under the race detector, which makes every lock
// operation several times slower, to keep the test within a few seconds.
const distinctKeys = 200_000
