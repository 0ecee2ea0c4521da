package sim

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sharebench/sharebench/internal/clip"
	"github.com/sharebench/sharebench/internal/simtime"
	"github.com/sharebench/sharebench/profile"
)

// RestartSource says where the cost a preempted job pays when it starts again comes from.
type RestartSource string

// The restart-cost sources.
const (
	// RestartOff charges nothing.
	RestartOff RestartSource = ""
	// RestartAuto takes the profile's cost where the profile gives one, else the lineage's table.
	RestartAuto RestartSource = "auto"
	// RestartProfile takes the profile's cost, 0 where it gives none.
	RestartProfile RestartSource = "profile"
	// RestartLineage takes the Muri simulator's per-model table (profile.LineageRestart) by the
	// trace's model name.
	RestartLineage RestartSource = "lineage"
	// RestartFixed charges RestartCost.Fixed to every restart.
	RestartFixed RestartSource = "fixed"
)

// RestartCost configures restart costs. The zero value charges nothing.
type RestartCost struct {
	Source RestartSource
	Fixed  time.Duration
}

// ParseRestartCost reads "auto", "profile", "lineage", "off" or a number of seconds.
func ParseRestartCost(s string) (RestartCost, error) {
	switch s {
	case "off":
		return RestartCost{}, nil
	case string(RestartAuto), string(RestartProfile), string(RestartLineage):
		return RestartCost{Source: RestartSource(s)}, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsNaN(v) || v > maxRestartS {
		return RestartCost{}, fmt.Errorf("restart cost %s: want auto, profile, lineage, off or seconds in [0, %g]", clip.Quote(s), maxRestartS)
	}
	if v == 0 {
		return RestartCost{}, nil
	}
	return RestartCost{Source: RestartFixed, Fixed: profile.Seconds(v)}, nil
}

// maxRestartS bounds a fixed restart cost (a year).
var maxRestartS = simtime.MaxRestart.Seconds()

// String is the form ParseRestartCost reads.
func (r RestartCost) String() string {
	switch r.Source {
	case RestartOff:
		return "off"
	case RestartFixed:
		return strconv.FormatFloat(r.Fixed.Seconds(), 'g', -1, 64)
	}
	return string(r.Source)
}

// restartOf returns the restart cost of a job of trace model traceModel (profile model
// profModel) on gpus GPUs, and where it came from.
func (r RestartCost) restartOf(prof *profile.Table, traceModel, profModel string, gpus int) (time.Duration, string) {
	switch r.Source {
	case RestartFixed:
		return r.Fixed, "fixed"
	case RestartProfile, RestartAuto:
		if prof != nil {
			if d, ok := prof.RestartFor(profModel, gpus); ok {
				return d, "profile"
			}
		}
		if r.Source == RestartProfile {
			return 0, "profile"
		}
		fallthrough
	case RestartLineage:
		d, known := profile.LineageRestart(traceModel, gpus)
		if !known {
			return d, "lineage default"
		}
		return d, "lineage"
	}
	return 0, "off"
}
