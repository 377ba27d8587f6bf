#!/usr/bin/env bash
# onsale-compare.sh measures an on-sale with and without a waiting room, side
# by side: the same screening layout, the same buyers and the same seed, on a
# cluster of three API instances over Postgres charging through the payment
# provider (scripts/cluster.sh), and prints one Markdown table of the two
# runs. The JSON and HTML reports are kept in the output directory.
#
#   scripts/onsale-compare.sh [loadgen flags...]
#
# Environment (all optional):
#   QUEUE_RATE   default 100: buyers admitted a second by the waiting room
#   OUT          default ${TMPDIR:-/tmp}/seatlock-onsale: reports, one pair per run
#   DB_MAX_CONNS default 8 per instance (Postgres is shared: keep pools small)
# and everything scripts/cluster.sh reads. A cluster this script started is
# stopped when it ends; one already running (scripts/cluster.sh start) is used
# and left running.
#
# Example:
#   scripts/onsale-compare.sh -buyers 2000 -seed 7
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster="$root/scripts/cluster.sh"
queue_rate="${QUEUE_RATE:-100}"
out="${OUT:-${TMPDIR:-/tmp}/seatlock-onsale}"
export DB_MAX_CONNS="${DB_MAX_CONNS:-8}"
mkdir -p "$out"

if ! flags=$("$cluster" flags 2>/dev/null); then
	flags=$("$cluster" start)
	trap '"$cluster" stop' EXIT
fi
case "$flags" in
*-payments*) ;;
*) echo "onsale-compare: the cluster has no payment provider (PAYMENTS_ADDR=off?)" >&2; exit 2 ;;
esac
loadgen="$("$cluster" dir)/loadgen"

# run NAME [flags]: one on-sale, its JSON report in $out/NAME.json. Exit
# status 1 (a harm that fails the run) is reported in the table, not fatal.
run() {
	local name=$1 status=0
	shift
	echo "onsale-compare: $name ($(uptime | sed 's/.*load average/load average/'))" >&2
	# shellcheck disable=SC2086 # $flags is a list of flags
	"$loadgen" $flags -scenario onsale -json -html "$out/$name.html" "$@" >"$out/$name.json" || status=$?
	if ((status > 1)); then
		echo "onsale-compare: loadgen failed ($status) on $name" >&2
		exit 2
	fi
}

run race "$@"
run queue -queue-rate "$queue_rate" "$@"

jq -rn --slurpfile a "$out/race.json" --slurpfile b "$out/queue.json" '
	def row($name; f): "| \($name) | \($a[0] | f) | \($b[0] | f) |";
	def ms: . * 10 | round / 10;
	"| | no waiting room | waiting room (\($b[0].onsale.queue_admit_per_s)/s) |",
	"|---|---|---|",
	row("buyers, seats"; "\(.onsale.buyers), \(.onsale.capacity)"),
	row("sold out after"; if .onsale.sold_out then "\(.onsale.sell_out_s * 100 | round / 100) s" else "not sold out" end),
	row("seats sold per second"; .onsale.seats_per_s * 10 | round / 10),
	row("hold requests"; .onsale.hold_requests),
	row("refused"; .onsale.refused),
	row("lock contention (seat_busy, seat_held)"; .onsale.lock_contention),
	row("queue joins + polls"; .onsale.joined + .onsale.polls),
	row("hold p50 / p99"; "\(.latency_ms.p50 | ms) / \(.latency_ms.p99 | ms) ms"),
	row("queue wait p50 / p99"; "\(.onsale.queue_wait_ms.p50 | ms) / \(.onsale.queue_wait_ms.p99 | ms) ms"),
	row("buyers with seats"; .onsale.buyers_with_seats),
	row("FIFO inversions"; .onsale.fifo_inversions),
	row("served out of order"; .onsale.served_out_of_order),
	row("stranded single seats"; .onsale.stranded_single_seats),
	row("confirmed seats"; "\(.onsale.confirmed_seats) of \(.onsale.capacity)"),
	row("double-booked, lost"; "\(.double_booked_seats), \(.lost_bookings)"),
	row("ledger"; .payments.ledger),
	row("result"; .result)
'
echo "onsale-compare: reports in $out" >&2
