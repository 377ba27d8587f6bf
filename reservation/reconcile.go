package reservation

import (
	"context"
	"time"
)

// DefaultReconcileEvery is Options.ReconcileEvery when it is zero.
const DefaultReconcileEvery = time.Second

// reconcileBatch is how many payments one store call settles at most.
const reconcileBatch = 32

// Reconcile settles, until ctx ends, the payments that nothing else will:
// a booking whose process crashed between the charge and the commit, a
// holder paused past every deadline, a settle that failed because the
// provider or the store was out of reach, a cancelled booking's refund.
// Every round it settles each payment that is due (open past its
// SettleAfter): the store holds the payment while the provider refunds or
// voids it by its id, skipping what another instance is settling, so every
// instance may run a reconciler and none needs to lead.
//
// So at rest (no booking in flight for PaymentsSettleWithin), the charges
// less the refunds at the provider equal the bookings confirmed through
// it. Reconcile returns at once when the service has no Payments.
func (s *Service) Reconcile(ctx context.Context) {
	if s.opts.Payments == nil {
		return
	}
	t := time.NewTicker(s.opts.ReconcileEvery)
	defer t.Stop()
	for {
		if n, err := s.SettleDue(ctx); err != nil && ctx.Err() == nil {
			s.opts.Logger.Warn("reconciling payments: some are left for the next round", "settled", n, "err", err)
		} else if n > 0 {
			s.opts.Logger.Info("reconciling payments: settled payments left open", "settled", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.settleNow:
		}
	}
}

// SettleDue settles every payment that is due now, as one round of
// Reconcile, and returns how many it settled. It returns the settle errors
// of the payments that stay open.
func (s *Service) SettleDue(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.store.SettleDue(ctx, reconcileBatch, s.refund)
		total += n
		if err != nil || n < reconcileBatch {
			return total, err
		}
	}
}

// wakeReconciler asks Reconcile for a round now, without waiting.
func (s *Service) wakeReconciler() {
	select {
	case s.settleNow <- struct{}{}:
	default:
	}
}
