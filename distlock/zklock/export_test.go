package zklock

// WaitingForTest returns how many calls wait for ZooKeeper's answer.
func (l *Locker) WaitingForTest() int64 { return l.waiting.Load() }

// DirForTest returns the znode directory that holds the queue of key.
func (l *Locker) DirForTest(key string) string {
	dir, err := l.dir(key)
	if err != nil {
		panic(err)
	}
	return dir
}
