package main

import (
	"errors"
	"strings"
	"testing"
)

func TestRunShowsSourceAndOutput(t *testing.T) {
	var out strings.Builder
	if err := run([]string{"../../../keyedlock", "ExampleMutex_LockAll"}, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"// ../../../keyedlock/example_test.go:",
		"func ExampleMutex_LockAll() {",
		"-- ExampleMutex_LockAll prints:\nlocked: 2\nC7 free? false\nafter unlock: 0\n",
		"-- the same as its // Output: block",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunRefuses(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		differs bool   // errDiffers, else another error
		shows   string // in the output
	}{
		{name: "an output that differs from the block", args: []string{"testdata/wrong", "ExampleWrong"}, differs: true,
			shows: "-- ExampleWrong prints:\nwhat it prints\n-- but its // Output: block says:\nwhat its block claims\n"},
		{name: "an example without an output block", args: []string{"testdata/wrong", "ExampleNoOutput"}},
		{name: "an example that does not exist", args: []string{"testdata/wrong", "ExampleMissing"}},
		{name: "a missing argument", args: []string{"testdata/wrong"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := run(tt.args, &out)
			if err == nil || errors.Is(err, errDiffers) != tt.differs {
				t.Fatalf("run: %v, want an error (differs: %v)\n%s", err, tt.differs, out.String())
			}
			if !strings.Contains(out.String(), tt.shows) {
				t.Errorf("output lacks %q:\n%s", tt.shows, out.String())
			}
		})
	}
}
