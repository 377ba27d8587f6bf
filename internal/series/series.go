// Package series keeps the Prometheus series that a hot path has resolved
// by their label values, so that a request finds its counter or histogram
// by one map lookup. A metric vector's WithLabelValues checks that every
// label value is valid UTF-8, hashes the values byte by byte and takes the
// vector's lock, on every call; a request of the API made four such calls,
// and its seat locks four more.
//
//	requests := series.New(func(route string) prometheus.Counter {
//		return requestsVec.WithLabelValues(route)
//	})
//	requests.Get(route).Inc()
//
// The keys must be bounded, as the label values of a metric must be: a
// Cache keeps every key it is given for the life of the process.
package series

import (
	"sync"
	"sync/atomic"
)

// Cache maps a key to what its resolve function returned for that key the
// first time. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	resolve func(K) V

	// current is read without a lock. The map it points to is never
	// changed once stored: a new key replaces it with a copy that holds
	// the key too. Keys are few and come early in a process's life, so
	// the copies stop soon, and a reader never waits for a writer.
	current atomic.Pointer[map[K]V]
	// adding serializes the additions, so that resolve runs once per key
	// and no addition is lost to another made at the same time.
	adding sync.Mutex
}

// New returns a Cache whose values resolve makes.
func New[K comparable, V any](resolve func(K) V) *Cache[K, V] {
	return &Cache[K, V]{resolve: resolve}
}

// Get returns the value of k, resolving it on k's first Get.
func (c *Cache[K, V]) Get(k K) V {
	if m := c.current.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	return c.add(k)
}

// add resolves k and stores a copy of the map that holds it too, unless
// another Get has added k first.
func (c *Cache[K, V]) add(k K) V {
	c.adding.Lock()
	defer c.adding.Unlock()
	var old map[K]V
	if m := c.current.Load(); m != nil {
		old = *m
	}
	if v, ok := old[k]; ok {
		return v
	}
	m := make(map[K]V, len(old)+1)
	for key, v := range old {
		m[key] = v
	}
	v := c.resolve(k)
	m[k] = v
	c.current.Store(&m)
	return v
}
