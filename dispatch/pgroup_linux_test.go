//go:build linux

package dispatch

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunCleanupDetachedAndBounded: a cleanup command runs in a process group of its own (a
// SIGINT to sharebench's group does not reach it), and one that does not finish within its
// limit is killed with everything in its group, and says so.
func TestRunCleanupDetachedAndBounded(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "hang")
	if err := os.WriteFile(script, []byte(`#!/bin/sh
cut -d' ' -f5 /proc/self/stat
sleep 600 &
echo $! >"$(dirname "$0")/child"
sleep 600
`), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := runCleanup(3*time.Second, "test", script, nil)
	if err == nil || !strings.Contains(err.Error(), "test: hang: stopped after 3s without an answer") {
		t.Errorf("err = %v", err)
	}
	if pgrp, _ := strconv.Atoi(strings.TrimSpace(string(out))); pgrp == 0 || pgrp == syscall.Getpgrp() {
		t.Errorf("the command ran in process group %q, this test's is %d", out, syscall.Getpgrp())
	}
	b, _ := os.ReadFile(filepath.Join(dir, "child"))
	child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if child == 0 {
		t.Fatal("the command's background child did not start")
	}
	for deadline := time.Now().Add(time.Minute); running(child); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the command's background child %d survived the limit", child)
		}
	}
}

// running reports whether pid is a process that is neither gone nor a zombie.
func running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}
