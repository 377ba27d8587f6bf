#!/usr/bin/env bash
# onsale-compare.sh measures an on-sale with and without a waiting room, side
# by side: the same screening layout, the same buyers and the same seed, on a
# cluster of three API instances over Postgres charging through the payment
# provider (scripts/cluster.sh), and prints one Markdown table, a column per
# run: every buyer racing for holds, then a waiting room at each pace of
# QUEUE_RATES. The JSON and HTML reports are kept in the output directory.
#
#   scripts/onsale-compare.sh [loadgen flags...]
#
# Environment (all optional):
#   QUEUE_RATES  default "100 20": the paces (buyers admitted a second) to try
#   OUT          default ${TMPDIR:-/tmp}/seatlock-onsale: loadgen, the reports
#   FLAGS        loadgen's -targets and -payments of a cluster that is already
#                running; default: those of scripts/cluster.sh, which is
#                started (and stopped at the end) unless it runs already
#   DB_MAX_CONNS default 8 per instance (Postgres is shared: keep pools small)
# and everything scripts/cluster.sh reads.
#
# Example:
#   scripts/onsale-compare.sh -buyers 2000 -seed 7
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster="$root/scripts/cluster.sh"
queue_rates="${QUEUE_RATES:-100 20}"
out="${OUT:-${TMPDIR:-/tmp}/seatlock-onsale}"
export DB_MAX_CONNS="${DB_MAX_CONNS:-8}"
mkdir -p "$out"

flags="${FLAGS:-}"
if [ -z "$flags" ] && ! flags=$("$cluster" flags 2>/dev/null); then
	flags=$("$cluster" start)
	trap '"$cluster" stop' EXIT
fi
case "$flags" in
*-payments*) ;;
*) echo "onsale-compare: the cluster has no payment provider (PAYMENTS_ADDR=off?)" >&2; exit 2 ;;
esac
(cd "$root" && go build -o "$out/loadgen" ./cmd/loadgen)

# run NAME [flags]: one on-sale, its JSON report in $out/NAME.json. Exit
# status 1 (a harm that fails the run) is reported in the table, not fatal.
run() {
	local name=$1 status=0
	shift
	echo "onsale-compare: $name ($(uptime | sed 's/.*load average/load average/'))" >&2
	# shellcheck disable=SC2086 # $flags is a list of flags
	"$out/loadgen" $flags -scenario onsale -json -html "$out/$name.html" "$@" >"$out/$name.json" || status=$?
	if ((status > 1)); then
		echo "onsale-compare: loadgen failed ($status) on $name" >&2
		exit 2
	fi
}

runs=("$out/race.json")
run race "$@"
for rate in $queue_rates; do
	run "queue$rate" -queue-rate "$rate" "$@"
	runs+=("$out/queue$rate.json")
done
echo "onsale-compare: done ($(uptime | sed 's/.*load average/load average/'))" >&2

jq -rs '
	def ms: . * 10 | round / 10;
	def row($name; f): "| \($name) | " + (map(f | tostring) | join(" | ")) + " |";
	row(""; if .onsale.queue_admit_per_s == 0 then "no waiting room" else "waiting room, \(.onsale.queue_admit_per_s)/s" end),
	"|---|" + (map("---|") | join("")),
	row("buyers, seats"; "\(.onsale.buyers), \(.onsale.capacity)"),
	row("sold out after"; if .onsale.sold_out then "\(.onsale.sell_out_s * 100 | round / 100) s" else "not sold out" end),
	row("seats sold per second"; .onsale.seats_per_s * 10 | round / 10),
	row("hold requests"; .onsale.hold_requests),
	row("refused"; .onsale.refused),
	row("lock contention (seat_busy, seat_held)"; .onsale.lock_contention),
	row("errors (no answer, 5xx)"; .errors),
	row("queue joins + polls"; .onsale.joined + .onsale.polls),
	row("buyers sent home from the queue"; .onsale.left.sold_out // 0),
	row("hold p50 / p99"; "\(.latency_ms.p50 | ms) / \(.latency_ms.p99 | ms) ms"),
	row("queue wait p50 / p99"; "\(.onsale.queue_wait_ms.p50 / 1000 | ms) / \(.onsale.queue_wait_ms.p99 / 1000 | ms) s"),
	row("buyers with seats"; .onsale.buyers_with_seats),
	row("FIFO inversions"; .onsale.fifo_inversions),
	row("served out of order"; .onsale.served_out_of_order),
	row("stranded single seats (avoidable)"; "\(.onsale.stranded_single_seats) (\(.onsale.stranded_avoidable))"),
	row("confirmed seats"; "\(.onsale.confirmed_seats) of \(.onsale.capacity)"),
	row("double-booked, lost"; "\(.double_booked_seats), \(.lost_bookings)"),
	row("charges − refunds = confirmed"; "\(.payments.charges) − \(.payments.refunds) = \(.payments.confirmed)\(if .payments.ledger_ok then "" else " (OFF)" end)"),
	row("result"; .result)
' "${runs[@]}"
echo "onsale-compare: reports in $out" >&2
