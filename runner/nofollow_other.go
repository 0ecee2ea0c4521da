//go:build !unix

package runner

// noFollow is not available; openNoFollow still checks for a regular file.
const noFollow = 0
