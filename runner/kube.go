package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// KubeDir is the directory inside a campaign directory that holds the Kubernetes
// dispatcher's files: the manifests it applied (JOB.json) and each pod's log (POD.log).
const KubeDir = "kubernetes"

// Defaults of the Kubernetes engine.
const (
	// DefaultKubeImage is the harness image of docker/harness.Dockerfile: sharebench and the
	// workloads.
	DefaultKubeImage = "sharebench-harness:latest"
	// KubeGPUResource is the device plugin's resource name.
	KubeGPUResource = "nvidia.com/gpu"
	// KubeGPUProductLabel is GPU Feature Discovery's node label naming the GPU model.
	KubeGPUProductLabel = "nvidia.com/gpu.product"
	// kubeConfigDir is where a pod sees the ConfigMap.
	kubeConfigDir = "/etc/sharebench"
	// kubeWorkDir is the pod's scratch directory (raw cell files; an emptyDir).
	kubeWorkDir = "/work"
	// kubeIndexEnv is the pod's environment variable holding its completion index, declared
	// through the downward API (the Job controller also sets JOB_COMPLETION_INDEX; declaring
	// it ourselves makes the $(…) expansion in the command independent of that).
	kubeIndexEnv = "SHAREBENCH_COMPLETION_INDEX"
)

// KubeConfig is a campaign's kubernetes section: how "profile run --backend kubernetes" builds
// its Indexed Job. Every field is optional; command-line flags override some of them.
type KubeConfig struct {
	// Namespace of the Job and ConfigMap (default: kubectl's current namespace).
	Namespace string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	// Context is kubectl's --context (default: the current context).
	Context string `yaml:"context,omitempty" json:"context,omitempty"`
	// Image holds sharebench and the workloads (default DefaultKubeImage, built from
	// docker/harness.Dockerfile); ImagePullPolicy defaults to IfNotPresent.
	Image           string `yaml:"image,omitempty" json:"image,omitempty"`
	ImagePullPolicy string `yaml:"image_pull_policy,omitempty" json:"image_pull_policy,omitempty"`
	// GPUProduct selects nodes by their nvidia.com/gpu.product label (e.g. NVIDIA-H200);
	// empty: any GPU node.
	GPUProduct string `yaml:"gpu_product,omitempty" json:"gpu_product,omitempty"`
	// GPUs is the number of whole GPUs per pod (default 1); both processes of a pair run in
	// the pod on them.
	GPUs int `yaml:"gpus,omitempty" json:"gpus,omitempty"`
	// Parallelism is how many pods run at once (default: all cells).
	Parallelism int `yaml:"parallelism,omitempty" json:"parallelism,omitempty"`
	// CPU and Memory are the pod's requests and limits (e.g. "8", "32Gi"); empty: none.
	CPU    string `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	Memory string `yaml:"memory,omitempty" json:"memory,omitempty"`
	// TTLSecondsAfterFinished lets Kubernetes delete a finished Job that the dispatcher could
	// not delete itself (default 86400).
	TTLSecondsAfterFinished int `yaml:"ttl_seconds_after_finished,omitempty" json:"ttl_seconds_after_finished,omitempty"`
	// ServiceAccount is the pods' service account (default: the namespace's default).
	ServiceAccount string `yaml:"service_account,omitempty" json:"service_account,omitempty"`
	// Python and Script are the workload interpreter and script inside the image (default
	// python3 and /opt/sharebench/train.py); they replace workload.python and
	// workload.script in the campaign the pods read.
	Python string `yaml:"python,omitempty" json:"python,omitempty"`
	Script string `yaml:"script,omitempty" json:"script,omitempty"`
	// Kubectl is the kubectl executable (default "kubectl" on PATH).
	Kubectl string `yaml:"kubectl,omitempty" json:"kubectl,omitempty"`
	// Poll is the first interval between status queries (default 5s), doubling while nothing
	// changes up to PollMax (default 60s).
	Poll    Duration `yaml:"poll,omitempty" json:"poll,omitempty"`
	PollMax Duration `yaml:"poll_max,omitempty" json:"poll_max,omitempty"`
}

// dnsLabelOK reports whether s is an RFC 1123 label (namespaces, service accounts).
func dnsLabelOK(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '-') {
			return false
		}
	}
	return true
}

// quantityOK reports whether s looks like a Kubernetes quantity ("8", "500m", "32Gi").
func quantityOK(s string) bool {
	return charsetOK(s, 32, ".", true) && s[0] >= '0' && s[0] <= '9'
}

func (k *KubeConfig) validate() error {
	for _, f := range []struct{ name, v string }{{"namespace", k.Namespace}, {"service_account", k.ServiceAccount}} {
		if f.v != "" && !dnsLabelOK(f.v) {
			return fmt.Errorf("kubernetes.%s: %q: want a DNS label (lower-case letters, digits, '-')", f.name, f.v)
		}
	}
	if k.Context != "" && !slurmValueOK(k.Context) {
		return fmt.Errorf("kubernetes.context: %q: want printable characters without spaces", k.Context)
	}
	if k.Image != "" && !safeImage(k.Image) {
		return fmt.Errorf("kubernetes.image: %q: not a plain image reference", k.Image)
	}
	switch k.ImagePullPolicy {
	case "", "Always", "IfNotPresent", "Never":
	default:
		return fmt.Errorf("kubernetes.image_pull_policy: %q: want Always, IfNotPresent or Never", k.ImagePullPolicy)
	}
	if k.GPUProduct != "" && !charsetOK(k.GPUProduct, 63, "._-", true) {
		return fmt.Errorf("kubernetes.gpu_product: %q: not a label value", k.GPUProduct)
	}
	for _, f := range []struct{ name, v string }{{"cpu", k.CPU}, {"memory", k.Memory}} {
		if f.v != "" && !quantityOK(f.v) {
			return fmt.Errorf("kubernetes.%s: %q: not a quantity (e.g. 8, 500m, 32Gi)", f.name, f.v)
		}
	}
	if k.GPUs < 0 || k.Parallelism < 0 || k.TTLSecondsAfterFinished < 0 || k.Poll < 0 || k.PollMax < 0 {
		return errors.New("kubernetes: gpus, parallelism, ttl_seconds_after_finished, poll and poll_max must not be negative")
	}
	if k.Script != "" && !strings.HasPrefix(k.Script, "/") {
		return fmt.Errorf("kubernetes.script: %q: must be an absolute path inside the image", k.Script)
	}
	return nil
}

// Kubernetes manifests: only the fields sharebench emits, marshalled to JSON for
// "kubectl apply -f -" (kubectl accepts JSON). No Kubernetes module is needed.
type (
	kubeMeta struct {
		Name      string            `json:"name,omitempty"`
		Namespace string            `json:"namespace,omitempty"`
		Labels    map[string]string `json:"labels,omitempty"`
	}
	kubeList struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Items      []any  `json:"items"`
	}
	kubeConfigMap struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   kubeMeta          `json:"metadata"`
		Data       map[string]string `json:"data"`
	}
	kubeJob struct {
		APIVersion string      `json:"apiVersion"`
		Kind       string      `json:"kind"`
		Metadata   kubeMeta    `json:"metadata"`
		Spec       kubeJobSpec `json:"spec"`
	}
	kubeJobSpec struct {
		CompletionMode          string          `json:"completionMode"`
		Completions             int             `json:"completions"`
		Parallelism             int             `json:"parallelism"`
		BackoffLimit            int             `json:"backoffLimit"`
		TTLSecondsAfterFinished int             `json:"ttlSecondsAfterFinished"`
		Template                kubePodTemplate `json:"template"`
	}
	kubePodTemplate struct {
		Metadata kubeMeta    `json:"metadata"`
		Spec     kubePodSpec `json:"spec"`
	}
	kubePodSpec struct {
		RestartPolicy      string            `json:"restartPolicy"`
		ServiceAccountName string            `json:"serviceAccountName,omitempty"`
		NodeSelector       map[string]string `json:"nodeSelector,omitempty"`
		Tolerations        []kubeToleration  `json:"tolerations,omitempty"`
		Containers         []kubeContainer   `json:"containers"`
		Volumes            []kubeVolume      `json:"volumes"`
	}
	kubeToleration struct {
		Key      string `json:"key"`
		Operator string `json:"operator"`
		Effect   string `json:"effect"`
	}
	kubeContainer struct {
		Name            string            `json:"name"`
		Image           string            `json:"image"`
		ImagePullPolicy string            `json:"imagePullPolicy"`
		Command         []string          `json:"command"`
		Env             []kubeEnv         `json:"env,omitempty"`
		Resources       kubeResources     `json:"resources"`
		VolumeMounts    []kubeVolumeMount `json:"volumeMounts"`
	}
	kubeEnv struct {
		Name      string        `json:"name"`
		Value     string        `json:"value,omitempty"`
		ValueFrom *kubeEnvValue `json:"valueFrom,omitempty"`
	}
	kubeEnvValue struct {
		FieldRef kubeFieldRef `json:"fieldRef"`
	}
	kubeFieldRef struct {
		FieldPath string `json:"fieldPath"`
	}
	kubeResources struct {
		Limits   map[string]string `json:"limits,omitempty"`
		Requests map[string]string `json:"requests,omitempty"`
	}
	kubeVolumeMount struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
		ReadOnly  bool   `json:"readOnly,omitempty"`
	}
	kubeVolume struct {
		Name      string               `json:"name"`
		ConfigMap *kubeConfigMapSource `json:"configMap,omitempty"`
		EmptyDir  *struct{}            `json:"emptyDir,omitempty"`
	}
	kubeConfigMapSource struct {
		Name string `json:"name"`
	}
)

// kubeJobName derives the Job (and ConfigMap) name from the campaign and the cells it runs:
// "sharebench-<campaign>-<hash>", a DNS label. The same cells give the same name, so a
// dispatcher that restarts finds (and adopts) the Job it applied before.
func kubeJobName(c *Campaign, cells []Cell) string {
	h := sha256.New()
	h.Write([]byte(c.Name))
	for _, cell := range cells {
		h.Write([]byte{0})
		h.Write([]byte(cell.ID))
	}
	sum := hex.EncodeToString(h.Sum(nil))[:8]
	var b strings.Builder
	for _, r := range strings.ToLower(c.Name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	if name == "" {
		return "sharebench-" + sum
	}
	return "sharebench-" + name + "-" + sum
}

// kubeManifest builds the ConfigMap and the Indexed Job that run cells: completion index i
// runs cells[i] (the ConfigMap's cells.txt maps one to the other), one pod per cell, each
// with whole GPUs, both processes of a pair inside it. campaignJSON is the campaign the pods
// read; solo, when not empty, holds solo results for pair cells with reuse_solo.
func kubeManifest(cfg KubeConfig, c *Campaign, name string, cells []Cell, campaignJSON, solo []byte) kubeList {
	labels := map[string]string{"app.kubernetes.io/name": "sharebench", "app.kubernetes.io/component": "profile-cell", "sharebench/campaign": kubeLabelValue(c.Name)}
	var idx strings.Builder
	for _, cell := range cells {
		idx.WriteString(strconv.Itoa(cell.Index))
		idx.WriteByte('\n')
	}
	data := map[string]string{"campaign.json": string(campaignJSON), "cells.txt": idx.String()}
	cmd := []string{"sharebench", "profile", "cell",
		"--campaign", kubeConfigDir + "/campaign.json", "--index-map", kubeConfigDir + "/cells.txt",
		"--index", "$(" + kubeIndexEnv + ")", "--backend", c.Backend, "--out", kubeWorkDir, "--journal=false"}
	if len(solo) > 0 {
		data["solo.jsonl"] = string(solo)
		cmd = append(cmd, "--solo-journal", kubeConfigDir+"/solo.jsonl")
	}
	meta := kubeMeta{Name: name, Namespace: cfg.Namespace, Labels: labels}
	res := kubeResources{}
	if c.Workload.Device != "cpu" {
		res.Limits = map[string]string{KubeGPUResource: strconv.Itoa(max(cfg.GPUs, 1))}
	}
	for _, q := range []struct{ key, v string }{{"cpu", cfg.CPU}, {"memory", cfg.Memory}} {
		if q.v == "" {
			continue
		}
		if res.Limits == nil {
			res.Limits = map[string]string{}
		}
		if res.Requests == nil {
			res.Requests = map[string]string{}
		}
		res.Limits[q.key], res.Requests[q.key] = q.v, q.v
	}
	pod := kubePodSpec{
		RestartPolicy:      "Never",
		ServiceAccountName: cfg.ServiceAccount,
		Containers: []kubeContainer{{
			Name: "cell", Image: cmpOrString(cfg.Image, DefaultKubeImage), ImagePullPolicy: cmpOrString(cfg.ImagePullPolicy, "IfNotPresent"),
			Command: cmd, Resources: res,
			Env: []kubeEnv{
				{Name: kubeIndexEnv, ValueFrom: &kubeEnvValue{FieldRef: kubeFieldRef{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
				{Name: "PYTHONUNBUFFERED", Value: "1"},
			},
			VolumeMounts: []kubeVolumeMount{{Name: "campaign", MountPath: kubeConfigDir, ReadOnly: true}, {Name: "work", MountPath: kubeWorkDir}},
		}},
		Volumes: []kubeVolume{{Name: "campaign", ConfigMap: &kubeConfigMapSource{Name: name}}, {Name: "work", EmptyDir: &struct{}{}}},
	}
	if c.Workload.Device != "cpu" {
		pod.Tolerations = []kubeToleration{{Key: KubeGPUResource, Operator: "Exists", Effect: "NoSchedule"}}
	}
	if cfg.GPUProduct != "" {
		pod.NodeSelector = map[string]string{KubeGPUProductLabel: cfg.GPUProduct}
	}
	par := cfg.Parallelism
	if par <= 0 || par > len(cells) {
		par = len(cells)
	}
	ttl := cfg.TTLSecondsAfterFinished
	if ttl == 0 {
		ttl = 86400
	}
	job := kubeJob{
		APIVersion: "batch/v1", Kind: "Job", Metadata: meta,
		Spec: kubeJobSpec{
			CompletionMode: "Indexed", Completions: len(cells), Parallelism: par, BackoffLimit: 0, TTLSecondsAfterFinished: ttl,
			Template: kubePodTemplate{Metadata: kubeMeta{Labels: labels}, Spec: pod},
		},
	}
	cm := kubeConfigMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: meta, Data: data}
	return kubeList{APIVersion: "v1", Kind: "List", Items: []any{cm, job}}
}

// kubeLabelValue turns a campaign name into a label value (≤ 63 characters, alphanumeric at
// both ends); campaign names are already limited to letters, digits, '.', '_' and '-'.
func kubeLabelValue(s string) string {
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.TrimRight(s, "._-")
}

func cmpOrString(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}

// kubeTaskCampaign returns the campaign the pods read: the resolved campaign with the image's
// interpreter and script.
func kubeTaskCampaign(cfg KubeConfig, c *Campaign) *Campaign {
	cp := *c
	if len(cp.Workload.Command) == 0 {
		cp.Workload.Python = cmpOrString(cfg.Python, "python3")
		cp.Workload.Script = cmpOrString(cfg.Script, "/opt/sharebench/train.py")
		cp.Container.WorkloadsDir = ""
	}
	return &cp
}
