package wrong_test

import "fmt"

// ExampleWrong's output block is wrong on purpose: showexample must say so.
// (testdata is never built by go test ./..., so nothing else runs it.)
func ExampleWrong() {
	fmt.Println("what it prints")
	// Output:
	// what its block claims
}

// ExampleNoOutput has no output block: there is nothing to compare.
func ExampleNoOutput() {
	fmt.Println("unchecked")
}
