// Showexample runs one of a package's testable examples as a program and
// shows what it prints, which `go test -v` never does: a passing example
// prints only its PASS line there. The workshop labs use it to let you see
// the output their text quotes.
//
//	go run ./docs/workshop/showexample ./distlock ExampleLock_Token
//
// It prints the example's source, runs it (the program go doc's
// playground would run: the example's body as main, with the declarations
// of its file that it uses), prints its output, and then compares that
// output with the example's "// Output:" block, as go test does. It exits
// 1 when they differ, and 2 when the example cannot be found or run.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/format"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// errDiffers is returned by run when the output is not the example's
// "// Output:" block.
var errDiffers = errors.New("showexample: the output differs from the // Output: block")

func main() {
	err := run(os.Args[1:], os.Stdout)
	switch {
	case err == nil:
	case errors.Is(err, errDiffers):
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "showexample:", err)
		os.Exit(2)
	}
}

// run shows the example named args[1] of the package in directory args[0].
func run(args []string, stdout io.Writer) error {
	if len(args) != 2 {
		return errors.New("usage: showexample PACKAGE-DIR ExampleName")
	}
	dir, name := args[0], args[1]
	fset := token.NewFileSet()
	ex, source, err := find(fset, dir, name)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "-- %s\n%s\n", name, source)

	// The program runs from the package's directory, so that its imports
	// resolve in the module the package belongs to.
	tmp, err := os.MkdirTemp("", "showexample")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var prog bytes.Buffer
	if err := format.Node(&prog, fset, ex.Play); err != nil {
		return err
	}
	file := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(file, prog.Bytes(), 0o644); err != nil {
		return err
	}
	var out bytes.Buffer
	cmd := exec.Command("go", "run", file)
	cmd.Dir = dir
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("running %s: %w", name, err)
	}
	fmt.Fprintf(stdout, "-- %s prints:\n%s", name, out.String())
	if !sameOutput(out.String(), ex.Output, ex.Unordered) {
		fmt.Fprintf(stdout, "-- but its // Output: block says:\n%s", ex.Output)
		return errDiffers
	}
	fmt.Fprintf(stdout, "-- the same as its // Output: block\n")
	return nil
}

// find returns the example function called name among the test files of
// dir, and its source as written, doc comment included, after a line
// that says where it is. An example without
// an output block, or one go/doc cannot make a program of, is an error.
func find(fset *token.FileSet, dir, name string) (*doc.Example, []byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, nil, err
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		i := slices.IndexFunc(f.Decls, func(d ast.Decl) bool {
			fd, ok := d.(*ast.FuncDecl)
			return ok && fd.Recv == nil && fd.Name.Name == name && fd.Body != nil
		})
		if i < 0 {
			continue
		}
		fd := f.Decls[i].(*ast.FuncDecl)
		examples := doc.Examples(f)
		j := slices.IndexFunc(examples, func(ex *doc.Example) bool { return ex.Code.Pos() == fd.Body.Pos() })
		if j < 0 {
			return nil, nil, fmt.Errorf("%s in %s is not a testable example", name, path)
		}
		ex := examples[j]
		switch {
		case ex.Output == "":
			return nil, nil, fmt.Errorf("%s in %s has no // Output: block", name, path)
		case ex.Play == nil:
			return nil, nil, fmt.Errorf("%s in %s cannot be run as a program of its own", name, path)
		}
		start := fd.Pos()
		if fd.Doc != nil {
			start = fd.Doc.Pos()
		}
		from, to := fset.Position(start).Offset, fset.Position(fd.End()).Offset
		where := fmt.Sprintf("// %s:%d\n", filepath.ToSlash(path), fset.Position(fd.Pos()).Line)
		return ex, append([]byte(where), src[from:to]...), nil
	}
	return nil, nil, fmt.Errorf("no %s in the test files of %s", name, dir)
}

// sameOutput compares as go test does: surrounding space ignored, and the
// lines in any order for an "// Unordered output:" block.
func sameOutput(got, want string, unordered bool) bool {
	got, want = strings.TrimSpace(got), strings.TrimSpace(want)
	if !unordered {
		return got == want
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}
