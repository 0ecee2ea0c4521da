// Package golden compares test output with golden files under testdata/.
//
// Run the tests with -update to rewrite the golden files from the current output. On a
// mismatch, Check writes the output next to the golden file as path+".got" (git-ignored) and
// reports a unified-style line diff, so the change can be inspected and accepted or rejected.
package golden
