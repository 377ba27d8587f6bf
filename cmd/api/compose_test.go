package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of compose.yaml that these checks read.
type composeFile struct {
	Services map[string]struct {
		Entrypoint  []string          `yaml:"entrypoint"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

// TestCompose reads compose.yaml, as no Docker engine runs here, and
// checks what a deployment from it relies on: every API instance has a
// healthcheck that this binary accepts and that is a check, not a server;
// their environment is a valid configuration; loadgen waits for every
// instance to be healthy; Redis keeps its fencing counters across a
// restart; Postgres allows the instances' connection budget with room to
// spare. A .dockerignore keeps the history out of the build.
func TestCompose(t *testing.T) {
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}

	var apis []string
	budget := 0
	for name, s := range c.Services {
		if !strings.HasPrefix(name, "api") {
			continue
		}
		apis = append(apis, name)
		test := s.Healthcheck.Test
		if len(test) < 2 || test[0] != "CMD" || test[1] != "/usr/local/bin/api" {
			t.Errorf("%s: healthcheck %q, want [CMD /usr/local/bin/api ...]: the image has no shell", name, test)
			continue
		}
		cfg, err := parseConfig(test[2:], func(k string) string { return s.Environment[k] }, os.Stderr)
		if err != nil {
			t.Errorf("%s: healthcheck %q with its environment: %v", name, test, err)
		} else if !cfg.Healthcheck {
			t.Errorf("%s: healthcheck %q would start a server, not check one", name, test)
		}
		budget += cfg.DBMaxConns
	}
	slices.Sort(apis)
	if len(apis) != 3 {
		t.Fatalf("API services %v, want three", apis)
	}

	for _, api := range apis {
		if got := c.Services["loadgen"].DependsOn[api].Condition; got != "service_healthy" {
			t.Errorf("loadgen depends on %s with condition %q, want service_healthy", api, got)
		}
	}

	redis := strings.Join(c.Services["redis"].Command, " ")
	if !strings.Contains(redis, "--appendonly yes") {
		t.Errorf("redis command %q: want --appendonly yes (fencing counters must survive a restart)", redis)
	}

	maxConns := 100 // Postgres's default
	pg := c.Services["postgres"].Command
	for i, arg := range pg {
		if v, ok := strings.CutPrefix(arg, "max_connections="); ok && i > 0 && pg[i-1] == "-c" {
			if maxConns, err = strconv.Atoi(v); err != nil {
				t.Fatalf("postgres %q: %v", arg, err)
			}
		}
	}
	// Room for psql, a test run and an operator.
	if budget+10 > maxConns {
		t.Errorf("the instances may open %d connections, Postgres allows %d: want 10 to spare", budget, maxConns)
	}

	ignore, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(ignore)), ".git") {
		t.Errorf(".dockerignore does not keep .git out of the build context")
	}
}
