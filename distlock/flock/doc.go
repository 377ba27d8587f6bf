// Package flock is a distlock backend on flock(2) file locks: one lock file
// per key in a directory, for several processes on one host (API instances
// in containers that share a volume, workers of one machine).
//
//	locker, err := flock.New("/var/lib/seatlock/locks", flock.Options{})
//	if err != nil {
//		return err
//	}
//	lock, err := locker.Obtain(ctx, "{screening-42}:C7", "{screening-42}:C8")
//	if err != nil {
//		return err // distlock.ErrNotAcquired when ctx ended first
//	}
//	defer lock.Release(ctx)
//	if err := lock.Err(); err != nil {
//		return err // a lock file was removed: do not write
//	}
//	return store.Book(ctx, seats, lock.Token("{screening-42}:C7"))
//
// # What the kernel promises
//
// flock(fd, LOCK_EX) gives one open file description at a time the
// exclusive lock on a file. The lock belongs to the open file description,
// not to the process: each Obtain opens the file anew, so two locks in one
// process exclude each other exactly as two processes do. (POSIX fcntl
// locks belong to the process instead, and would let every goroutine of a
// process in at once.) The kernel releases the lock when the last
// descriptor of that open file is closed, which includes the death of the
// process, however it dies: a crashed holder frees its keys at once, with
// no lease to wait out and no clock involved.
//
// # The lock file of a key
//
// A key's file is named after the hex SHA-256 of the key (Locker.Path): any
// key gives a safe name of fixed length, with no path separators and no
// surprises from case-insensitive file systems. Lock files are never
// removed. Removing one while it is in use breaks the lock: a process that
// opened the old file holds a lock on a file nobody else will open, and the
// next process creates and locks a new one. So after taking the flock, a
// locker checks that the path still names the file it locked (same device
// and inode) and starts again if not; and each held lock's watchdog makes
// the same check every RenewEvery, and declares the lock lost (Lost
// closed, Err wrapping distlock.ErrLost) when its file was removed or
// replaced. That is the only way a file lock is lost while its process
// lives.
//
// # Waiting
//
// flock can block, but a blocked flock cannot be interrupted by a context.
// So an attempt takes every key with LOCK_NB, in sorted order, and gives
// back what it took if one is held: a waiter never holds a key, so waiters
// cannot deadlock. There is no queue: waiters are served in no particular
// order.
//
// Between attempts a waiter sleeps until a release wakes it, or a jittered
// exponential backoff (MinBackoff to MaxBackoff) runs out. On Linux the
// wake-up comes from the kernel, through inotify: Release, after the
// unlock, opens the key's lock file for writing and closes it, and every
// waiter watching that file sees IN_CLOSE_WRITE. Attempts open lock files
// read-only, so a waiter's failed attempt wakes nobody, and waiters cannot
// wake each other into a busy loop. The waiter sets its watch up after its
// first failed attempt and then tries once more, so a release between the
// two is not missed. The inotify descriptor waits in the runtime's poller,
// where a read deadline, moved to now when the context ends, cuts the wait
// short. A closed inotify descriptor costs the kernel a grace period of
// several milliseconds, so a Locker keeps the descriptors of waiters that
// are done for the next ones, with their watches removed.
//
// What wakes nobody is noticed within the backoff: a holder that died (the
// kernel frees its keys but announces nothing), a key freed by another
// waiter's all-or-nothing attempt giving it back, and everything on
// systems without inotify.
//
// # Fencing
//
// A counter per key, in a file next to the lock file (".fence", whose
// second line is the key, for people who look), is read, incremented,
// written and fsynced while the key is locked, so fencing tokens strictly
// increase per key. The counter lives apart from the lock file so that it
// survives a removed lock file, which is when two holders can exist and the
// fence must tell them apart; for the same reason its update takes a short
// flock of its own.
//
// # When it fails
//
// Only processes of one kernel see each other's locks. flock over NFS is
// emulated with byte-range locks by Linux clients and may not exclude
// clients on other hosts at all; other network file systems differ again.
// Use a local file system, shared only by processes (or containers) of one
// host.
//
// # In the backend table
//
//	| backend | promises | costs | fails when | fencing |
//	| file    | exclusion among processes of one host; freed at once when the holder dies | a few syscalls and an fsync per key per Obtain; waiters woken by inotify (Linux), else polling | the lock file is removed; several hosts (NFS) | counter file per key, fsynced |
package flock
