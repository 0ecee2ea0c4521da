package runner

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/dispatch"
)

// KubeDir is the directory inside a campaign directory that holds the Kubernetes
// dispatcher's files: the manifests it applied (JOB.json) and each pod's log (POD.log).
const KubeDir = "kubernetes"

// KubeConfig is a campaign's kubernetes section: the engine's settings for its Indexed Job
// and where the workload lives inside the image. Every field is optional; command-line flags
// override some of them.
type KubeConfig struct {
	dispatch.KubeConfig `yaml:",inline"`
	// Python and Script are the workload interpreter and script inside the image (default
	// python3 and /opt/sharebench/train.py); they replace workload.python and
	// workload.script in the campaign the pods read.
	Python string `yaml:"python,omitempty" json:"python,omitempty"`
	Script string `yaml:"script,omitempty" json:"script,omitempty"`
}

func (k *KubeConfig) validate() error {
	if err := k.KubeConfig.Validate("kubernetes"); err != nil {
		return err
	}
	if k.Script != "" && !strings.HasPrefix(k.Script, "/") {
		return fmt.Errorf("kubernetes.script: %q: must be an absolute path inside the image", k.Script)
	}
	if k.Python != "" && !dispatch.ValueOK(k.Python) {
		return errors.New("kubernetes.python: want a command without spaces")
	}
	return nil
}

// kubeJobName derives the Job (and ConfigMap) name from the campaign and the cells it runs:
// the same cells give the same name, so a dispatcher that restarts finds (and adopts) the Job
// it applied before.
func kubeJobName(c *Campaign, cells []Cell) string {
	ids := make([]string, len(cells))
	for i, cell := range cells {
		ids[i] = cell.ID
	}
	return dispatch.JobName(c.Name, ids...)
}

// kubeJob describes the Indexed Job that runs cells: completion index i runs cells[i] (the
// files' cells.txt maps one to the other), one pod per cell, each with whole GPUs, both
// processes of a pair inside it. campaignJSON is the campaign the pods read; solo, when not
// empty, holds solo results for pair cells with reuse_solo.
func kubeJob(c *Campaign, name string, cells []Cell, campaignJSON, solo []byte) dispatch.IndexedJob {
	var idx strings.Builder
	for _, cell := range cells {
		idx.WriteString(strconv.Itoa(cell.Index))
		idx.WriteByte('\n')
	}
	dir := dispatch.KubeConfigDir
	files := map[string]string{"campaign.json": string(campaignJSON), "cells.txt": idx.String()}
	cmd := []string{"sharebench", "profile", "cell",
		"--campaign", dir + "/campaign.json", "--index-map", dir + "/cells.txt",
		"--index", dispatch.KubeIndexRef, "--backend", c.Backend, "--out", dispatch.KubeWorkDir, "--journal=false"}
	if len(solo) > 0 {
		files["solo.jsonl"] = string(solo)
		cmd = append(cmd, "--solo-journal", dir+"/solo.jsonl")
	}
	gpus := 0
	if c.Workload.Device != "cpu" {
		gpus = c.maxGPUs()
	}
	return dispatch.IndexedJob{
		Name: name, Component: "profile-cell", Labels: map[string]string{"sharebench/campaign": dispatch.LabelValue(c.Name)},
		Completions: len(cells), Command: cmd, Files: files, GPUs: gpus,
	}
}

// kubeTaskCampaign returns the campaign the pods read: the resolved campaign with the image's
// interpreter and script.
func kubeTaskCampaign(cfg KubeConfig, c *Campaign) *Campaign {
	cp := *c
	if len(cp.Workload.Command) == 0 {
		cp.Workload.Python = firstNonEmpty(cfg.Python, "python3")
		cp.Workload.Script = firstNonEmpty(cfg.Script, "/opt/sharebench/train.py")
		cp.Container.WorkloadsDir = ""
	}
	return &cp
}
