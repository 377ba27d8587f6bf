package main

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestBadFlagsExitTwo(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"unknown flag", []string{"-nope"}},
		{"bad number", []string{"-clients", "many"}},
		{"zero clients", []string{"-clients", "0"}},
		{"negative rate", []string{"-rate", "-1"}},
		{"zero requests", []string{"-requests", "0"}},
		{"unknown scenario", []string{"-scenario", "stampede"}},
		{"too many hot seats", []string{"-seats", "2601"}},
		{"bad duration", []string{"-duration", "soon"}},
		{"negative payment delay", []string{"-payment-delay", "-5ms"}},
		{"target without scheme", []string{"-targets", "127.0.0.1:8080"}},
		{"empty targets", []string{"-targets", ","}},
		{"stray argument", []string{"extra"}},
		{"compare with -screening", []string{"compare", "-screening", "demo"}},
		{"compare with bad flag", []string{"compare", "-nope"}},
		{"healthz with -payments", []string{"-scenario", "healthz", "-payments", "http://127.0.0.1:9"}},
		{"-settle-wait without -payments", []string{"-settle-wait", "1s"}},
		{"-abandon without hold", []string{"-scenario", "best", "-abandon", "0.2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runLoadgen(t, nil, tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "loadgen: ") {
				t.Errorf("want one line on stderr, got stdout %q stderr %q", stdout, stderr)
			}
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	code, _, stderr := runLoadgen(t, nil, "-h")
	if code != 0 || !strings.Contains(stderr, "-targets") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestParseFlags(t *testing.T) {
	env := func(string) string { return "" }
	t.Run("defaults", func(t *testing.T) {
		cfg, err := parseFlags("loadgen", nil, env, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.targets[0] != "http://127.0.0.1:8080" || cfg.scenario != "hot" || cfg.clients != 64 ||
			cfg.rate != 0 || cfg.requests != 2000 || !cfg.stopByRequests || cfg.seats != 4 ||
			cfg.lock != "" || cfg.guard != "" || cfg.hasPaymentDelay || cfg.jsonOutput {
			t.Errorf("defaults: %+v", cfg)
		}
	})
	t.Run("targets are split and trimmed", func(t *testing.T) {
		cfg, err := parseFlags("loadgen", []string{"-targets", "http://a:1/, http://b:2"}, env, nil)
		if err != nil || len(cfg.targets) != 2 || cfg.targets[0] != "http://a:1" || cfg.targets[1] != "http://b:2" {
			t.Errorf("targets %q, %v", cfg.targets, err)
		}
	})
	t.Run("duration alone replaces the request count", func(t *testing.T) {
		cfg, _ := parseFlags("loadgen", []string{"-duration", "5s"}, env, nil)
		if cfg.stopByRequests || cfg.duration != 5*time.Second {
			t.Errorf("%+v", cfg)
		}
		cfg, _ = parseFlags("loadgen", []string{"-duration", "5s", "-requests", "10"}, env, nil)
		if !cfg.stopByRequests || cfg.requests != 10 {
			t.Errorf("both given: %+v", cfg)
		}
	})
	t.Run("payment delay zero is still sent", func(t *testing.T) {
		cfg, _ := parseFlags("loadgen", []string{"-payment-delay", "0s"}, env, nil)
		if !cfg.hasPaymentDelay || cfg.paymentDelay != 0 {
			t.Errorf("%+v", cfg)
		}
	})
	t.Run("errors are usage errors", func(t *testing.T) {
		_, err := parseFlags("loadgen", []string{"-clients", "-3"}, env, nil)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("err = %v, want a *usageError", err)
		}
	})
}
