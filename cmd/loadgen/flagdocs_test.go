package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEveryFlagIsDocumented checks that docs/loadgen.md names every flag
// that loadgen's usage text lists, so that a new flag cannot be added
// without its row.
func TestEveryFlagIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/loadgen.md")
	if err != nil {
		t.Fatal(err)
	}
	var usage, nemesis bytes.Buffer
	_, _ = parseFlags("loadgen", []string{"-h"}, func(string) string { return "" }, &usage)
	_, _ = parseNemesisFlags([]string{"-h"}, &nemesis)
	flag := regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
	flags := flag.FindAllStringSubmatch(usage.String(), -1)
	if len(flags) < 10 {
		t.Fatalf("usage lists %d flags; cannot read it:\n%s", len(flags), usage.String())
	}
	if n := flag.FindAllStringSubmatch(nemesis.String(), -1); len(n) < 8 {
		t.Fatalf("nemesis usage lists %d flags; cannot read it:\n%s", len(n), nemesis.String())
	} else {
		flags = append(flags, n...)
	}
	for _, f := range flags {
		if !strings.Contains(string(doc), "`-"+f[1]+"`") {
			t.Errorf("docs/loadgen.md does not document -%s", f[1])
		}
	}
}
