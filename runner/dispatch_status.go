package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Cell states reported by CampaignStatus besides the record statuses (ok, infeasible,
// infeasible_predicted, failed).
const (
	// CellRunning: a cluster task runs the cell now (as of the dispatch record).
	CellRunning = "running"
	// CellQueued: a cluster task for the cell waits in the engine's queue.
	CellQueued = "queued"
	// CellStarted: the cell's raw-file directory exists but it has no record: a local run is
	// measuring it, or was interrupted while it did.
	CellStarted = "started"
	// CellPending: nothing has happened to the cell yet.
	CellPending = "pending"
)

// CellState is one row of CampaignStatus.
type CellState struct {
	Index int    `json:"index"`
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Label string `json:"label"`
	// Status is a record status or one of CellRunning, CellQueued, CellStarted, CellPending.
	Status string `json:"status"`
	// Attempts counts the cell's records in the journal.
	Attempts int `json:"attempts"`
	// Where is the cluster task ("slurm 1234_5") or the host of the latest record.
	Where string `json:"where,omitempty"`
	// Reason says why a cell failed or is infeasible, or why its task waits.
	Reason string `json:"reason,omitempty"`
}

// StatusCounts tallies CellState.Status.
type StatusCounts struct {
	Total               int `json:"total"`
	OK                  int `json:"ok"`
	Infeasible          int `json:"infeasible"`
	InfeasiblePredicted int `json:"infeasible_predicted"`
	Failed              int `json:"failed"`
	Unavailable         int `json:"unavailable,omitempty"`
	Running             int `json:"running"`
	Queued              int `json:"queued"`
	Started             int `json:"started"`
	Pending             int `json:"pending"`
}

// CampaignStatusReport is what "sharebench profile status DIR" shows.
type CampaignStatusReport struct {
	Campaign string       `json:"campaign"`
	Dir      string       `json:"dir"`
	Counts   StatusCounts `json:"counts"`
	// Engine, Jobs, EngineActive and EngineUpdated come from dispatch.json when a cluster
	// engine ran (part of) the campaign.
	Engine        string     `json:"engine,omitempty"`
	Jobs          []string   `json:"jobs,omitempty"`
	EngineActive  bool       `json:"engine_active,omitempty"`
	EngineUpdated *time.Time `json:"engine_updated,omitempty"`
	// SkippedLines counts journal lines left out: cut short, or records that fail validation.
	SkippedLines int         `json:"skipped_lines,omitempty"`
	Cells        []CellState `json:"cells"`
}

// CampaignStatus reports the state of every cell of the campaign in dir: from the journal
// (ok, infeasible, failed with reasons), the dispatch record (queued and running cluster
// tasks) and the raw-file directories (cells a local run has started). c may be nil: the
// campaign is then read from dir (its plan, manifest.json, or the copy cluster tasks use);
// without one, only cells with a record or a task are listed.
func CampaignStatus(dir string, c *Campaign) (CampaignStatusReport, error) {
	rep := CampaignStatusReport{Dir: dir}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return rep, fmt.Errorf("runner: status: %s is not a campaign directory", dir)
	}
	records, problems, err := ReadJournal(filepath.Join(dir, JournalFile))
	if err != nil {
		return rep, err
	}
	rep.SkippedLines = len(problems)
	ds, err := ReadDispatchState(dir)
	if err != nil {
		return rep, err
	}
	if c == nil {
		c = campaignOf(dir)
	}
	latest := Latest(records)
	attempts := map[string]int{}
	for _, r := range records {
		attempts[r.Cell.ID]++
	}
	var cells []Cell
	if c != nil {
		rep.Campaign = c.Name
		cells = c.Cells()
	} else {
		seen := map[string]bool{}
		for _, r := range records {
			if !seen[r.Cell.ID] {
				seen[r.Cell.ID] = true
				cells = append(cells, r.Cell)
			}
			rep.Campaign = r.Campaign
		}
		slices.SortStableFunc(cells, func(a, b Cell) int { return a.Index - b.Index })
	}
	tasks := map[string]TaskStatus{}
	if ds != nil {
		rep.Engine, rep.Jobs, rep.EngineActive = ds.Engine, ds.Jobs, ds.Active
		u := ds.Updated
		rep.EngineUpdated = &u
		if rep.Campaign == "" {
			rep.Campaign = ds.Campaign
		}
		for _, t := range ds.Tasks {
			tasks[t.CellID] = t
		}
	}
	started := map[string]bool{}
	if ents, err := os.ReadDir(filepath.Join(dir, "cells")); err == nil {
		for _, e := range ents {
			started[e.Name()] = true
		}
	}
	for _, cell := range cells {
		s := CellState{Index: cell.Index, ID: cell.ID, Kind: cell.Kind, Label: cell.Label, Attempts: attempts[cell.ID], Status: CellPending}
		r, hasRecord := latest[cell.ID]
		t, hasTask := tasks[cell.ID]
		switch {
		case hasTask && ds.Active && t.Active() && !(hasRecord && r.Status.Done()):
			s.Status = CellQueued
			if st := strings.ToUpper(t.State); st == "RUNNING" || st == "COMPLETING" || st == "CONFIGURING" {
				s.Status = CellRunning
			}
			s.Where, s.Reason = ds.Engine+" "+t.Task, t.Reason
		case hasRecord:
			s.Status, s.Reason = string(r.Status), r.Reason
			s.Where = r.Env.Hostname
			if hasTask {
				s.Where = strings.TrimSpace(ds.Engine + " " + t.Task + " " + r.Env.Hostname)
			}
		case cell.ID != "" && len(cell.ID) >= 8 && started[cell.Dir()]:
			s.Status = CellStarted
		}
		rep.Cells = append(rep.Cells, s)
		rep.Counts.Total++
		switch s.Status {
		case string(StatusOK):
			rep.Counts.OK++
		case string(StatusInfeasible):
			rep.Counts.Infeasible++
		case string(StatusInfeasiblePredicted):
			rep.Counts.InfeasiblePredicted++
		case string(StatusFailed):
			rep.Counts.Failed++
		case string(StatusUnavailable):
			rep.Counts.Unavailable++
		case CellRunning:
			rep.Counts.Running++
		case CellQueued:
			rep.Counts.Queued++
		case CellStarted:
			rep.Counts.Started++
		default:
			rep.Counts.Pending++
		}
	}
	return rep, nil
}

// campaignOf reads the campaign of a directory: from its plan (PlanFile, written before the
// first cell of every run and dispatch), else from manifest.json (directories of runners that
// wrote no plan), else from the copy the cluster tasks read. Nil when none exists or parses.
func campaignOf(dir string) *Campaign {
	if c, err := LoadCampaign(filepath.Join(dir, PlanFile)); err == nil {
		return c
	}
	if b, err := os.ReadFile(filepath.Join(dir, ManifestFile)); err == nil {
		var m struct {
			Campaign json.RawMessage `json:"campaign"`
		}
		if json.Unmarshal(b, &m) == nil && len(m.Campaign) > 0 {
			if c, err := ParseCampaign(m.Campaign, ManifestFile); err == nil {
				return c
			}
		}
	}
	for _, p := range []string{filepath.Join(dir, SlurmDir, "campaign.json"), filepath.Join(dir, KubeDir, "campaign.json")} {
		if c, err := LoadCampaign(p); err == nil {
			return c
		}
	}
	return nil
}
