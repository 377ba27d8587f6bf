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
//	POST /v1/charges               Idempotency-Key: <payment id>
//	                               {"booking_id","screening_id","seats","customer","fences","delay_ms"}
//	                               201 {"charge_id"} after delay_ms, or 409 {"error":{"code":"stale_fence","seen":{seat: fence}}},
//	                               or 409 {"error":{"code":"voided"}}
//	POST /v1/refunds               {"idempotency_key"}
//	                               200 {"idempotency_key","refunded","voided","charge_id"}; 400 without the key
//	POST /v1/charges/{id}/refund   200 {"charge_id","refunded":true}; 404 for an unknown charge
//	GET  /v1/stats                 200 {"charges","refunds","voids","overlaps","refused_stale","max_concurrent"}
//
// A payment is data before it is a charge. The API records a payment
// before it charges, and sends the record's id as the charge's
// Idempotency-Key: a repeat with the same key charges nothing more and gets
// the first charge's answer, waiting for it while it is in progress. A
// charge without the header has no idempotency: every one is a charge.
//
// A charge is made when its delay is over, whether or not its caller still
// waits, as a real provider's is: a caller that gave up during the delay
// (its lock was lost, its request was cancelled, its process died) is
// charged all the same, and does not learn the charge's id. What settles
// such a charge is the key it was made under. POST /v1/refunds gives back
// the charge made under a key; when none has completed, it voids the key
// instead: a charge in progress under it ends at once, uncharged, and its
// caller gets 409 voided; a charge arriving later under it is refused 409
// voided without starting. A void is not a charge. Repeating a refund
// changes nothing and gets the same answer: refunded is true when a charge
// was given back, by it or before; voided, when the key was voided. So at
// rest, charges minus refunds is the bookings confirmed, whatever hung up
// on the way.
//
// The Go API is the same protocol without HTTP:
//
//	p := payment.NewProvider(payment.ProviderOptions{})
//	id, err := p.Charge("pay_1", req)  // a repeat of "pay_1" answers id, err again
//	answer, err := p.RefundKey("pay_1") // answer.Refunded, answer.ChargeID == id
//
// `loadgen payments` serves a Provider.
package payment
