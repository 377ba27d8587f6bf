package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// errUnsafe is returned by run when verification found a double-booked
// seat, a lost booking or a booking that contradicts a refusal: exit
// status 1.
var errUnsafe = errors.New("loadgen: verification failed")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitStatus(err, os.Stderr))
}

// exitStatus maps the result of run to the exit status that docs/loadgen.md
// documents and prints the error, on one line, to stderr: 0 clean, 1 unsafe,
// 2 anything that kept loadgen from running or verifying (bad flags,
// unreachable targets, a server that refused the set-up).
func exitStatus(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUnsafe):
		fmt.Fprintln(stderr, err)
		return 1
	default:
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return 2
	}
}

// run is loadgen without the process around it: it parses args, runs one
// scenario (or, for "compare", one per strategy), prints the report on
// stdout and returns errUnsafe (wrapped) when verification failed.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "payments" {
		return runPayments(ctx, args[1:], stderr)
	}
	if len(args) > 0 && args[0] == "nemesis" {
		return runNemesis(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "gate" {
		return runGate(ctx, args[1:], stderr)
	}
	if len(args) > 0 && args[0] == "compare" {
		cfg, err := parseFlags("loadgen compare", args[1:], getenv, stderr)
		if err != nil {
			return err
		}
		return runCompare(ctx, cfg, stdout, stderr)
	}
	cfg, err := parseFlags("loadgen", args, getenv, stderr)
	if err != nil {
		return err
	}
	rep, err := runScenario(ctx, cfg, newProgress(cfg, stderr))
	if err != nil {
		return err
	}
	if cfg.jsonOutput {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeText(stdout, rep)
	}
	if err != nil {
		return err
	}
	if cfg.htmlFile != "" {
		title := fmt.Sprintf("loadgen: %s, lock %s, guard %s", rep.Scenario, rep.Strategy, rep.Guard)
		if err := writeHTMLFile(cfg.htmlFile, title, []*report{rep}); err != nil {
			return err
		}
	}
	if rep.failed() {
		return fmt.Errorf("%w: %s", errUnsafe, strings.Join(rep.failures(), ", "))
	}
	return nil
}
