package reservation

// The catalogue: every lock strategy and write guard, as data. It is the one
// place where a strategy is named, said safe or not, and tied to what it
// needs; the server attaches a locker builder to each row (cmd/api), the
// service refuses the unsafe ones outside demo mode, and the load
// generator's compare runs the rows in this order.

// Reach is between whom a strategy's lock keeps a second booking of a seat
// out while the first holds it. Where a lock does not reach, two bookings
// hold one seat at once, and the write guard decides what then happens.
type Reach string

// The reaches, in the words of the README's strategy table.
const (
	ReachNone     Reach = "no"
	ReachInstance Reach = "within one instance"
	ReachHost     Reach = "within one host"
	ReachAll      Reach = "across instances"
)

// StrategyInfo is one row of the strategy catalogue.
type StrategyInfo struct {
	Name Strategy
	// Needs is the server setting (its environment variable) without
	// which the strategy is not offered; "" when it needs none.
	Needs string
	Reach Reach
	Doc   string // one line: what the strategy teaches
}

// Safe reports whether the strategy keeps two bookings of a seat apart at
// all, which is what a server outside demo mode requires.
func (s StrategyInfo) Safe() bool { return s.Reach != ReachNone }

// Strategies returns the strategy catalogue, in the order the workshop meets
// the strategies.
func Strategies() []StrategyInfo {
	return []StrategyInfo{
		{Name: LockNone, Reach: ReachNone, Doc: "nothing: check, pay, write; shows the race"},
		{Name: LockGlobal, Reach: ReachInstance, Doc: "one mutex per process: every seat waits for every other"},
		{Name: LockKeyed, Reach: ReachInstance, Doc: "one in-process mutex per seat: parallel, blind to other instances"},
		{Name: LockRedis, Reach: ReachAll, Doc: "a Redis lock per seat, with a fencing token and a renewed lease"},
		{Name: LockKeyedRedis, Reach: ReachAll, Doc: "the keyed mutex in front of the Redis lock: one caller per process and seat on Redis"},
		{Name: LockPostgres, Needs: "DATABASE_URL", Reach: ReachAll, Doc: "a Postgres session advisory lock per seat"},
		{Name: LockPostgresXact, Needs: "DATABASE_URL", Reach: ReachAll, Doc: "an advisory lock in the transaction that writes: lock and write commit together"},
		{Name: LockRedlock, Needs: "REDLOCK_URLS", Reach: ReachAll, Doc: "Redlock: a majority of independent Redis servers grants each seat"},
		{Name: LockFile, Reach: ReachHost, Doc: "a file lock per seat: several processes, one host"},
		{Name: LockZooKeeper, Needs: "ZOOKEEPER_SERVERS", Reach: ReachAll, Doc: "ZooKeeper's fair lock recipe: waiters served in arrival order"},
	}
}

// GuardInfo is one row of the write guards' table.
type GuardInfo struct {
	Name Guard
	Safe bool // false: offered only in demo mode
	// TwoHolders is what the final write does when two bookings hold one
	// seat at once: under a strategy that does not reach between them, or
	// when a lock's lease ran out under its holder (a pause, a failover).
	TwoHolders string
}

// Guards returns the write guards' table.
func Guards() []GuardInfo {
	return []GuardInfo{
		{Name: GuardFence, Safe: true, TwoHolders: "one of the two writes is refused (409), its charge refunded: no double booking"},
		{Name: GuardOff, TwoHolders: "both writes land: the seat is double-booked"},
	}
}

// StrategyOf returns the catalogue's row of a strategy, and whether it has
// one.
func StrategyOf(l Strategy) (StrategyInfo, bool) {
	for _, s := range Strategies() {
		if s.Name == l {
			return s, true
		}
	}
	return StrategyInfo{}, false
}

// GuardOf returns the table's row of a guard, and whether it has one.
func GuardOf(g Guard) (GuardInfo, bool) {
	for _, r := range Guards() {
		if r.Name == g {
			return r, true
		}
	}
	return GuardInfo{}, false
}

// Safe reports whether a screening under lock l and guard g can never be
// double-booked: both are known and neither is demo only.
func Safe(l Strategy, g Guard) bool {
	s, okS := StrategyOf(l)
	r, okG := GuardOf(g)
	return okS && okG && s.Safe() && r.Safe
}
