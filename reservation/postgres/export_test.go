package postgres

// MaxConns returns the size of the store's pool, for tests.
func MaxConns(s *Store) int32 { return s.pool.Config().MaxConns }
