package policy

import (
	"testing"
	"unsafe"
)

// TestJobLayout keeps Job's layout as its comment says: a whole number of 64-byte cache lines,
// so that the jobs of a run's array start on line boundaries, with a running job's remaining
// time (RemTime) in the first two lines and the fields that rank and place a pending job by the
// end of the third.
func TestJobLayout(t *testing.T) {
	var j Job
	if size := unsafe.Sizeof(j); size%64 != 0 {
		t.Errorf("Job is %d bytes, not a whole number of cache lines", size)
	}
	end := func(off, size uintptr) uintptr { return off + size }
	if e := max(end(unsafe.Offsetof(j.P), unsafe.Sizeof(j.P)), end(unsafe.Offsetof(j.Xi), 8), end(unsafe.Offsetof(j.Opt), 8),
		end(unsafe.Offsetof(j.Running), 1), end(unsafe.Offsetof(j.Options), 16), end(unsafe.Offsetof(j.Fast), 8)); e > 128 {
		t.Errorf("a running job's remaining time reads up to byte %d, past its first two cache lines", e)
	}
	if e := max(end(unsafe.Offsetof(j.K), unsafe.Sizeof(j.K)), end(unsafe.Offsetof(j.Family), 8), end(unsafe.Offsetof(j.Size), 8),
		end(unsafe.Offsetof(j.On), 24), end(unsafe.Offsetof(j.Job)+unsafe.Offsetof(j.Job.GPUs), 8)); e > 192 {
		t.Errorf("a pending job's rank and shape read up to byte %d, past its first three cache lines", e)
	}
}
