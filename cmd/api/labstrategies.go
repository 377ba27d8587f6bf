package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/seatlock/seatlock/distlock"
	"github.com/seatlock/seatlock/locking"
	"github.com/seatlock/seatlock/reservation"
)

// The strategies that run the locks workshop attendees write
// (docs/workshop/write): the API, loadgen, the payment provider and the
// fault gates judge them as they judge the project's own. They are
// offered in demo mode only, as code being written should be. Which code
// they run is chosen when the API is built: the attendee's folders by
// default, the solutions with -tags labsolution (lab_attendee.go,
// lab_solution.go).
const (
	labKeyed reservation.Strategy = "lab-keyed"
	labRedis reservation.Strategy = "lab-redis"
	labPg    reservation.Strategy = "lab-pg"
)

func labStrategies() []strategy {
	return []strategy{
		{StrategyInfo: reservation.StrategyInfo{Name: labKeyed, Needs: "DEMO_MODE", Reach: reservation.ReachInstance, Doc: "the attendee's keyed mutex"}, locker: func(lb *lockBackends, _ context.Context) (reservation.SeatLocker, error) {
			lb.logger.Info("lab lock", "strategy", labKeyed, "code", labCode)
			return lb.measured(labKeyed, perKey{m: newLabKeyed()}), nil
		}},
		{StrategyInfo: reservation.StrategyInfo{Name: labRedis, Needs: "DEMO_MODE", Reach: reservation.ReachAll, Doc: "the attendee's Redis lock"}, locker: func(lb *lockBackends, _ context.Context) (reservation.SeatLocker, error) {
			lb.logger.Info("lab lock", "strategy", labRedis, "code", labCode)
			return lb.measured(labRedis, locking.Distributed(newLabRedis(lb.b.redis, lb.cfg.LockTTL))), nil
		}},
		{StrategyInfo: reservation.StrategyInfo{Name: labPg, Needs: "DEMO_MODE and DATABASE_URL", Reach: reservation.ReachAll, Doc: "the attendee's Postgres lock"}, locker: func(lb *lockBackends, ctx context.Context) (reservation.SeatLocker, error) {
			lb.logger.Info("lab lock", "strategy", labPg, "code", labCode)
			pool, err := lb.lockPool(ctx)
			if err != nil {
				return nil, err
			}
			locks := newLabPg(pool, lb.cfg.LockTTL)
			if err := locks.Setup(ctx); err != nil {
				return nil, fmt.Errorf("%s: create its lease table: %w", labPg, err)
			}
			return lb.measured(labPg, locking.Distributed(locks)), nil
		}},
	}
}

// labPgLocker is the Postgres lock of the lab: a distlock.Locker whose
// lease table Setup creates.
type labPgLocker interface {
	distlock.Locker
	Setup(ctx context.Context) error
}

// keyMutex is the keyed mutex of the lab: keyedlock.Mutex's Lock and
// Unlock.
type keyMutex interface {
	Lock(ctx context.Context, key string) error
	Unlock(key string)
}

// perKey locks a booking's seats on a keyMutex one at a time, in the
// order the service sorted them, and unlocks what it took when a wait
// fails.
type perKey struct{ m keyMutex }

func (p perKey) LockSeats(ctx context.Context, screeningID string, seats []string) (reservation.SeatLease, error) {
	var held []string
	unlock := func() {
		for _, k := range held {
			p.m.Unlock(k)
		}
	}
	for _, seat := range seats {
		key := reservation.SeatKey(screeningID, seat)
		if err := p.m.Lock(ctx, key); err != nil {
			unlock()
			if ctx.Err() != nil {
				return nil, errors.Join(err, ctx.Err())
			}
			return nil, errors.Join(reservation.ErrUnavailable, err)
		}
		held = append(held, key)
	}
	return locking.LeaseFunc(unlock), nil
}
