// Package payment is seatlock's payment provider protocol: Client, the
// reservation.Payments the API charges through when PAYMENT_URL is set, and
// Provider, an in-memory provider that counts what a lock is for.
//
// A seat lock exists to protect the work done while it is held. In seatlock
// that work is the payment: a booking charges the customer inside its
// critical section, then writes the seats through the guarded write. The
// guarded write alone keeps the seat map right even without a lock (a second
// writer of a seat is refused), but it cannot take a charge back. Two lock
// holders of one seat at once means two customers charged for one seat, and
// one of them refunded. Provider measures exactly that:
//
//   - an overlap is a charge that starts for a seat while another charge for
//     the same seat is still in progress: two lock holders at once;
//   - with CheckFences, a charge that carries a fencing token older than the
//     newest the provider has seen for one of its seats is refused
//     (stale_fence), which is Kleppmann's point about fencing made on a side
//     effect: the resource, not the lock, has the last word.
//
// The protocol, over HTTP and JSON:
//
//	POST /v1/charges               {"booking_id","screening_id","seats","customer","fences","delay_ms"}
//	                               201 {"charge_id"} after delay_ms, or 409 {"error":{"code":"stale_fence"}}
//	POST /v1/charges/{id}/refund   200 {"charge_id","refunded":true}; 404 for an unknown charge
//	GET  /v1/stats                 200 {"charges","refunds","overlaps","refused_stale","max_concurrent"}
//
// A charge is made when its delay is over and its caller is still waiting:
// a caller that gave up during the delay (its lock was lost, its request
// was cancelled) is not charged. `loadgen payments` serves a Provider.
package payment
