package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// maxReadLines is the most lines a file the reading map names may have:
// one sitting, top to bottom.
const maxReadLines = 300

// TestReadingMapFiles holds docs/workshop/reading.md to its promise: every
// file it names exists and reads in at most maxReadLines lines.
func TestReadingMapFiles(t *testing.T) {
	doc, err := os.ReadFile("../../docs/workshop/reading.md")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`([A-Za-z0-9_./-]+\\.(?:go|sql|lua))`").FindAllSubmatch(doc, -1)
	if len(named) < 10 {
		t.Fatalf("the reading map names %d files; want one per idea", len(named))
	}
	for _, m := range named {
		name := string(m[1])
		if filepath.Dir(name) == "." {
			continue // a file named again without its directory, next to its full path
		}
		src, err := os.ReadFile(filepath.Join("../..", name))
		if err != nil {
			t.Errorf("the reading map names %s: %v", name, err)
			continue
		}
		if n := bytes.Count(src, []byte("\n")); n > maxReadLines {
			t.Errorf("the reading map names %s, %d lines: more than %d", name, n, maxReadLines)
		}
	}
}
