//go:build !(linux && cgo)

package gpu

import "fmt"

// OpenNVML is unavailable in builds without cgo (go-nvml needs cgo); it always returns an
// error wrapping ErrUnavailable. Use the nvidia-smi sampler instead.
func OpenNVML() (Sampler, error) {
	return nil, fmt.Errorf("gpu: nvml: this build has no cgo: %w", ErrUnavailable)
}
