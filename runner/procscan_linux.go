//go:build linux

package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// tokenProcs returns the processes (other than this one) whose environment holds EnvToken
// with a value starting with prefix. Environments are inherited, so this finds what a
// workload spawned even after it left the process group (setsid) or lost its parent.
func tokenProcs(prefix string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	me := os.Getpid()
	want := []byte(EnvToken + "=" + prefix)
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == me {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.HasPrefix(kv, want) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// killTokenProcs SIGKILLs the processes tokenProcs finds and waits (up to 5 s) until they are
// gone or zombies, so that their GPU memory is free for the next run. It returns their PIDs.
func killTokenProcs(prefix string) []int {
	pids := tokenProcs(prefix)
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return pids
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && !bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

// cpuAffinity returns this process's CPU affinity as a list ("0-15"), which the workloads
// inherit; "" when unknown.
func cpuAffinity() string {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return ""
	}
	var cpus []int
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpuRanges(cpus)
}
