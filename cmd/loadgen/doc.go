// Loadgen drives the seatlock API with concurrent bookings and then proves,
// from what it saw, whether any seat was double-booked.
//
// Usage:
//
//	loadgen [flags]            run one scenario, verify, report
//	loadgen compare [flags]    the same scenario under every strategy, one table
//	loadgen payments [flags]   the in-memory payment provider
//	loadgen gate [flags]       a TCP proxy that holds what clients send, on a signal
//
// A run creates a fresh screening (or uses -screening), sends booking
// requests round-robin to -targets, and then verifies. Every request books
// for a customer name used by no other request, so each answer and each
// booked seat can be traced back to exactly one request. Verification has
// two independent halves:
//
//   - counting: a seat confirmed by 201 to two bookings is double-booked; a
//     confirmed booking that does not hold its seats in the final seat map
//     is lost.
//   - linearizability: every seat is a register, free or held by one
//     customer, and porcupine searches for an order of the observed
//     operations, each taking effect between its send and its answer, that
//     this register would have produced. Requests that got no answer (or a
//     5xx) may or may not have booked; the model tries both.
//
// Scenarios pick the seats: hot (everyone races for -seats seats), spread
// (every request a different seat, on as many screenings as needed), mixed
// (Zipf-skewed popularity) and multi (groups of 2 to 4 adjacent seats);
// healthz only sends GET /healthz and verifies nothing, to measure loadgen
// itself against another load tool.
// Without -rate the load is a closed loop of -clients clients; with it, an
// open loop whose latency counts from each request's scheduled time.
//
// Every report also shows the run over time, in buckets of its wall time:
// throughput, latency, errors by kind and, with -payments, overlapping
// charges polled from the provider during the run. Faults are marked on it
// from the file of -faults, to which whoever injects them appends one JSON
// line per fault ({"name","start","end"}, RFC 3339), so that an outage,
// the recovery and the moment a lock broke can be seen side by side.
//
// The report ends with a verdict that names every harm the run showed, not
// only the data's: CLEAN (no harm of any kind, said once in the report),
// HARMED (overlapping charges, refunds, stale charges refused, errors, a
// history that is not linearizable: named, exit status 0) or FAILED.
//
// With -payments, the ledger is checked too: once the run is over, the
// provider's charges minus refunds during the run must equal the bookings
// the run confirmed, within -settle-wait (a charge left pending is settled
// by the API after the run).
//
// Thresholds, as k6 has them (-max-overlaps, -max-refunds, -max-errors,
// -max-p99, -min-rps), fail the run when a figure crosses them, and are
// listed in the report, passed or not.
//
// Exit status: 0 when nothing failed, 1 when a seat was double-booked, a
// confirmed booking was lost, a seat was booked for a request that was
// refused, the ledger did not balance, or a threshold was crossed; 2 for
// bad usage, unreachable targets or a run that could not be verified.
// (go run turns every failure into its own exit status 1: build loadgen
// where the status matters.) A target that does not answer yet is retried
// for up to 5 seconds before it counts as unreachable.
//
// Example, three instances against one Postgres and one Redis:
//
//	scripts/cluster.sh start
//	go build -o bin/loadgen ./cmd/loadgen
//	bin/loadgen -targets http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083 \
//	    -scenario hot -lock keyed -payment-delay 5ms
//
// See docs/loadgen.md for every flag, the report fields and how parallelism
// is defined.
package main
