package zklock

// DirForTest returns the znode directory that holds the queue of key.
func (l *Locker) DirForTest(key string) string {
	dir, err := l.dir(key)
	if err != nil {
		panic(err)
	}
	return dir
}
