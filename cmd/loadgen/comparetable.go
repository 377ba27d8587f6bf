package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// The compare table. By default it fits a terminal of 120 columns: one
// column per figure that tells the strategies apart, a verdict column with
// one word, and what does not fit a row (why a strategy was refused, every
// harm of a run that was not clean) as numbered notes under the table.
// -wide prints every figure and the whole verdict on each row.

// tableWidth is the width the default table and its notes fit in.
const tableWidth = 120

// compareColumn is one column of the compare table.
type compareColumn struct {
	head     string
	payments bool // shown only when the runs had a payment provider
	cell     func(r *report) string
}

// names reports whether the column names the strategy, which a refused
// strategy's row shows too.
func (c compareColumn) names() bool { return c.head == "STRATEGY" || c.head == "GUARD" }

// harmColumns are the columns of what went wrong, in both tables.
var harmColumns = []compareColumn{
	{"ERRORS", false, func(r *report) string { return strconv.Itoa(r.Errors) }},
	{"DOUBLE-BOOKED", false, func(r *report) string { return strconv.Itoa(r.DoubleBookedSeats) }},
	{"LOST", false, func(r *report) string { return strconv.Itoa(r.LostBookings) }},
	{"OVERLAPS", true, payCell(func(p *paymentCounts) int64 { return p.Overlaps })},
	{"REFUNDS", true, payCell(func(p *paymentCounts) int64 { return p.Refunds })},
}

// narrowColumns are the columns of the default table.
var narrowColumns = slices.Concat([]compareColumn{
	{"STRATEGY", false, runName},
	{"BOOKED", false, func(r *report) string { return strconv.Itoa(r.Succeeded) }},
}, harmColumns, []compareColumn{
	{"REQ/S", false, func(r *report) string { return fmt.Sprintf("%.0f", r.ThroughputRPS) }},
	{"P99", false, func(r *report) string { return fmtShort(r.LatencyMS.P99) }},
	{"PARALLELISM", false, func(r *report) string { return fmt.Sprintf("%.2f", r.Parallelism) }},
})

// droppable are the columns of the default table left out, in this order,
// when the table would otherwise be wider than tableWidth (counts of six
// digits and more): -wide has them.
var droppable = []string{"PARALLELISM", "P99", "REQ/S"}

// wideColumns are the columns of -wide.
var wideColumns = slices.Concat([]compareColumn{
	{"STRATEGY", false, func(r *report) string { return r.Strategy }},
	{"GUARD", false, func(r *report) string { return r.Guard }},
	{"CONFIRMED", false, func(r *report) string { return strconv.Itoa(r.Succeeded) }},
	{"CONFLICTS", false, func(r *report) string { return strconv.Itoa(r.Conflicts) }},
}, harmColumns, []compareColumn{
	{"REFUSED-STALE", true, payCell(func(p *paymentCounts) int64 { return p.RefusedStale })},
	{"LEDGER", true, ledgerCell},
	{"THROUGHPUT", false, func(r *report) string { return fmt.Sprintf("%.0f req/s", r.ThroughputRPS) }},
	{"P50", false, func(r *report) string { return fmtMS(r.LatencyMS.P50) }},
	{"P99", false, func(r *report) string { return fmtMS(r.LatencyMS.P99) }},
	{"PARALLELISM", false, func(r *report) string { return fmt.Sprintf("%.2f", r.Parallelism) }},
	{"LINEARIZABLE", false, func(r *report) string { return string(r.Linearizable) }},
})

// payCell is a cell of a payment figure, "-" for a run without one.
func payCell(f func(*paymentCounts) int64) func(*report) string {
	return func(r *report) string {
		if r.Payments == nil {
			return "-"
		}
		return strconv.FormatInt(f(r.Payments), 10)
	}
}

// ledgerCell is "ok", the difference ("+3": charges nobody booked), or
// "not charged".
func ledgerCell(r *report) string {
	switch p := r.Payments; {
	case p == nil:
		return "-"
	case p.NotCharging:
		return "not charged"
	case p.LedgerOK:
		return "ok"
	}
	return fmt.Sprintf("%+d", r.Payments.LedgerDiff)
}

// notes are the numbered notes under the table; a text given twice (the
// same refusal) gets one number.
type notes struct {
	texts []string
}

// add returns the number of text, adding it when it is new.
func (n *notes) add(text string) int {
	for i, t := range n.texts {
		if t == text {
			return i + 1
		}
	}
	n.texts = append(n.texts, text)
	return len(n.texts)
}

// verdictCell is a row's verdict: the whole of it with -wide, else its
// result and the number of the note that says the rest.
func verdictCell(r *report, wide bool, n *notes) string {
	switch {
	case r.Refused != "" && wide:
		return "refused: " + r.Refused
	case r.Refused != "":
		return fmt.Sprintf("refused [%d]", n.add("refused: "+r.Refused))
	case wide || r.result() == resultClean:
		return r.verdict()
	}
	return fmt.Sprintf("%s [%d]", r.result(), n.add(runName(r)+": "+r.verdict()))
}

// writeCompare prints one row per strategy, then the notes, the
// thresholds and what clean means. A refused strategy's row has a dash in
// every column, so that it cannot widen the columns of the others.
func writeCompare(w io.Writer, results []*report, wide bool, cleanMeans string) error {
	withPayments := false
	for _, r := range results {
		withPayments = withPayments || r.Payments != nil
	}
	var columns []compareColumn
	for _, c := range narrowColumns {
		if withPayments || !c.payments {
			columns = append(columns, c)
		}
	}
	if wide {
		columns = nil
		for _, c := range wideColumns {
			if withPayments || !c.payments {
				columns = append(columns, c)
			}
		}
	}
	table, n := compareTable(results, columns, wide)
	var dropped []string
	for _, drop := range droppable {
		if wide || maxWidth(table) <= tableWidth {
			break
		}
		columns = slices.DeleteFunc(columns, func(c compareColumn) bool { return c.head == drop })
		dropped = append(dropped, drop)
		table, n = compareTable(results, columns, wide)
	}
	if _, err := io.WriteString(w, table); err != nil {
		return err
	}
	if len(dropped) > 0 {
		n.add(strings.Join(dropped, ", ") + " left out to fit " + strconv.Itoa(tableWidth) + " columns: -wide shows every column")
	}
	return writeCompareNotes(w, results, n, wide, withPayments, cleanMeans)
}

// compareTable lays out the rows of the results in columns, and returns
// the notes their verdict cells point at.
func compareTable(results []*report, columns []compareColumn, wide bool) (string, notes) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	var head []string
	for _, c := range columns {
		head = append(head, c.head)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\tVERDICT")
	var n notes
	for _, r := range results {
		var cells []string
		for _, c := range columns {
			if r.Refused != "" && !c.names() {
				cells = append(cells, "-")
			} else {
				cells = append(cells, c.cell(r))
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t"+verdictCell(r, wide, &n))
	}
	_ = tw.Flush() // a strings.Builder does not fail
	return b.String(), n
}

// maxWidth is the width, in runes, of the longest line of text.
func maxWidth(text string) int {
	w := 0
	for _, line := range strings.Split(text, "\n") {
		w = max(w, utf8.RuneCountInString(line))
	}
	return w
}

// fmtShort prints milliseconds with three or four significant digits:
// "450µs", "12.35ms", "1m1.23s".
func fmtShort(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// writeCompareNotes prints what follows the table, wrapped to tableWidth
// unless wide.
func writeCompareNotes(w io.Writer, results []*report, n notes, wide, withPayments bool, cleanMeans string) error {
	width := tableWidth
	if wide {
		width = 0
	}
	lines := []string{""}
	for i, t := range n.texts {
		lines = append(lines, wrap(fmt.Sprintf("[%d] %s", i+1, t), width, "    ")...)
	}
	for _, t := range thresholdSummary(results) {
		lines = append(lines, wrap("threshold "+t, width, "    ")...)
	}
	lines = append(lines, "")
	if cleanMeans != "" {
		lines = append(lines, wrap("Clean means "+cleanMeans+".", width, "")...)
	}
	note := "none and guard off are unsafe on purpose: compare exits 1 only when another strategy fails."
	if withPayments {
		note += " Overlaps are charges for a seat that began while another was in progress: two lock holders at once;" +
			" refunds are charges given back because the guarded write refused the booking."
	}
	lines = append(lines, wrap(note, width, "")...)
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// wrap breaks text into lines of at most width runes at spaces (a word
// longer than a line is left whole), the lines after the first indented.
// A width of 0 leaves text on one line.
func wrap(text string, width int, indent string) []string {
	if width <= 0 {
		return []string{text}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = indent + word
		}
	}
	return append(lines, line)
}
