package profile

import (
	"math"
	"slices"
	"strings"
)

// The memory estimate used where a data set has no memory figures (Gavel, Blox, Pollux). The
// estimate of one process's peak GPU memory at sub-batch b is
//
//	mem(b) = MemOverheadMiB + params·state_bytes + MemActFactor·act_per_sample·b
//
// where params·state_bytes covers weights, gradients and optimizer state, and act_per_sample is
// the activation memory autograd keeps for the backward pass of one sample. docs/profile-import.md
// states the reasoning behind every constant.
const (
	// MemOverheadMiB is the fixed cost of one training process: the CUDA context with
	// PyTorch's kernel images, cuDNN/cuBLAS handles and workspaces, as nvidia-smi shows it for
	// an idle PyTorch process with CUDA 11 (eager module loading).
	MemOverheadMiB = 1536
	// MemActFactor scales the saved activations up for the transient buffers of the backward
	// pass (activation gradients, cuDNN workspaces) and the caching allocator's rounding.
	MemActFactor = 1.25
)

// Bytes of per-parameter training state: weights + gradients + optimizer state.
const (
	stateSGD         = 8  // fp32 weights and gradients
	stateSGDMomentum = 12 // + momentum buffer (RMSprop's square average takes the same room)
	stateAdam        = 16 // + two Adam moments
	stateMixedAdam   = 18 // Megatron fp16: fp16 weights 2 + fp32 main grads 4 + fp32 master 4 + Adam 8
)

// MemModel holds the constants of the memory estimate for one architecture.
type MemModel struct {
	// Arch is the key of the architecture, e.g. "resnet50" or "resnet18-cifar10".
	Arch string
	// ParamsM is the number of trainable parameters in millions.
	ParamsM float64
	// StateBytes is the number of bytes kept per parameter: weights, gradients, optimizer state.
	StateBytes float64
	// ActMiBPerSample is the activation memory saved for backward per training sample, in MiB.
	ActMiBPerSample float64
	// Basis says where the numbers come from.
	Basis string
}

// memModels is the constant table of architectures the estimate knows. Activation sizes marked
// "measured" are the bytes of the distinct tensor storages that autograd saves for backward in a
// forward pass (torch 1.13 saved-tensor hooks, fp32, CPU, no weights loaded), per sample, from
// the difference between batch 3 and batch 1; those marked "analytic" use the per-layer count of
// Korthikanti et al. (2022), "Reducing Activation Recomputation in Large Transformer Models":
// s·h·34 + 5·a·s² bytes per layer and sample in fp16, s·h·66 + 9·a·s² in fp32.
var memModels = map[string]MemModel{
	"resnet18":           {"resnet18", 11.69, stateSGDMomentum, 21.15, "torchvision resnet18, 224×224, SGD+momentum; activations measured"},
	"resnet18-cifar10":   {"resnet18-cifar10", 11.17, stateSGDMomentum, 4.48, "CIFAR-10 ResNet-18 (3×3 stem, no max-pool), 32×32, SGD+momentum; activations measured"},
	"resnet50":           {"resnet50", 25.56, stateSGDMomentum, 81.93, "torchvision resnet50, 224×224, SGD+momentum; activations measured"},
	"vgg16":              {"vgg16", 138.36, stateSGDMomentum, 69.96, "torchvision vgg16, 224×224, SGD+momentum; activations measured"},
	"vgg19":              {"vgg19", 143.67, stateSGDMomentum, 74.93, "torchvision vgg19, 224×224, SGD+momentum; activations measured"},
	"shufflenet_v2_x1_0": {"shufflenet_v2_x1_0", 2.28, stateSGDMomentum, 19.44, "torchvision shufflenet_v2_x1_0, 224×224, SGD+momentum; activations measured"},
	"dcgan":              {"dcgan", 6.34, stateAdam, 2.41, "DCGAN (nz 100, ngf = ndf = 64), 64×64, Adam; G(z), D(fake) and D(real) measured"},
	"cyclegan":           {"cyclegan", 28.29, stateAdam, 2344.57, "CycleGAN (two 9-block ResNet generators, two PatchGAN discriminators), 256×256, Adam; the generator step's six G and two D passes measured"},
	"lm-wikitext2":       {"lm-wikitext2", 13.99, stateSGD, 9.2, "2-layer LSTM LM (emsize = nhid = 200, vocabulary 33 278, bptt 35), plain SGD; analytic: logits and log-softmax of 35 tokens dominate"},
	"transformer-multi30k": {"transformer-multi30k", 52, stateAdam, 18.1,
		"Transformer base (d 512, 8 heads, 6+6 layers, ff 2048) on Multi30k, Adam; ≈44.1M layer and ≈8M embedding parameters; analytic, assuming 32-token padded sentences"},
	"bert-base-mlm512": {"bert-base-mlm512", 110, stateAdam, 682, "BERT-base MLM, sequence 512, fp32, AdamW; analytic (12 layers × 54.3 MB + 62.5 MB logits)"},
	"bert-base-squad":  {"bert-base-squad", 110, stateAdam, 405, "BERT-base fine-tuning on SQuAD, sequence 384, fp32, Adam; analytic (12 layers × 35.4 MB)"},
	"gpt2-small-1024":  {"gpt2-small-1024", 124.4, stateAdam, 2282, "GPT-2 small, sequence 1024, fp32, AdamW; analytic (12 layers × 165 MB + 412 MB logits)"},
	"bert-large-fp16":  {"bert-large-fp16", 336, stateMixedAdam, 977, "Megatron BERT-large, sequence 512, fp16 mixed precision, Adam; analytic (24 layers × 38.8 MB + 94 MB logits)"},
	"gpt2-medium-fp16": {"gpt2-medium-fp16", 355, stateMixedAdam, 3030, "Megatron GPT-2 medium, sequence 1024, fp16 mixed precision, Adam; analytic (24 layers × 119.5 MB + 309 MB logits)"},
	"nature-cnn-atari": {"nature-cnn-atari", 1.69, stateSGDMomentum, 0.16, "Nature DQN/A2C CNN on 84×84×4 Atari frames, RMSprop; analytic (conv and fc outputs)"},
}

// memAliases maps the model keys of the imported profiles and of the authors' workloads onto
// architectures of memModels. A key that is an architecture itself needs no alias.
var memAliases = map[string]string{
	// the authors' workloads (docs/paper.md §7.2)
	"bert": "bert-base-mlm512",
	"gpt2": "gpt2-small-1024",
	"dqn":  "nature-cnn-atari",
	"a2c":  "nature-cnn-atari",
	// Blox
	"bert-large":  "bert-large-fp16",
	"gpt2-medium": "gpt2-medium-fp16",
	// Gavel ("gavel:" prefix: Gavel's ResNet-18 is the CIFAR-10 variant)
	"gavel:resnet18":    "resnet18-cifar10",
	"gavel:transformer": "transformer-multi30k",
	"gavel:lm":          "lm-wikitext2",
	// Pollux applications
	"pollux:cifar10":  "resnet18-cifar10",
	"pollux:imagenet": "resnet50",
	"pollux:bert":     "bert-base-squad",
}

// MemModelFor returns the memory constants of a model key: an architecture of the table (e.g.
// "resnet50"), an authors' model key ("bert", "dqn"), or a source-qualified key such as
// "gavel:resnet18" or "pollux:imagenet". A qualified key without its own entry falls back to the
// key after the colon.
func MemModelFor(model string) (MemModel, bool) {
	if a, ok := memAliases[model]; ok {
		model = a
	}
	if m, ok := memModels[model]; ok {
		return m, true
	}
	if _, rest, ok := strings.Cut(model, ":"); ok {
		return MemModelFor(rest)
	}
	return MemModel{}, false
}

// MemArchs returns the architectures the estimate knows, sorted.
func MemArchs() []string {
	out := make([]string, 0, len(memModels))
	for k := range memModels {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// EstimateMem returns the estimated peak GPU memory, in bytes rounded up to whole MiB, of one
// training process of model at the given sub-batch (see MemModelFor for the accepted keys). The
// bool is false for an unknown model or a sub-batch below 1.
func EstimateMem(model string, subBatch int) (int64, bool) {
	m, ok := MemModelFor(model)
	if !ok || subBatch < 1 {
		return 0, false
	}
	mib := MemOverheadMiB + m.ParamsM*1e6*m.StateBytes/(1<<20) + MemActFactor*m.ActMiBPerSample*float64(subBatch)
	return int64(math.Ceil(mib)) << 20, true
}

// authorsMemMiB are the SJF-BSBF authors' per-model memory constants (workloads/models_msg.py,
// MB = MiB), measured at their fixed batch sizes (authorsBatch) on RTX A6000 GPUs (docs/paper.md §2.2).
var authorsMemMiB = map[string]int64{
	"resnet18":           6432,
	"shufflenet_v2_x1_0": 5252,
	"vgg19":              4304,
	"vgg16":              4224,
	"dqn":                2230,
	"a2c":                2094,
	"bert":               8058,
	"gpt2":               10532,
}

// authorsBatch are the authors' fixed per-GPU batch sizes (docs/paper.md §7.2, §7.4).
var authorsBatch = map[string]int{
	"resnet18":           128,
	"shufflenet_v2_x1_0": 128,
	"vgg19":              16,
	"vgg16":              16,
	"dqn":                128,
	"a2c":                64,
	"bert":               4,
	"gpt2":               4,
}

// AuthorsMem returns the SJF-BSBF authors' measured memory per GPU of one of their eight models
// in bytes, and the fixed per-GPU batch it was measured at.
func AuthorsMem(model string) (bytes int64, batch int, ok bool) {
	mib, ok := authorsMemMiB[model]
	if !ok {
		return 0, 0, false
	}
	return mib << 20, authorsBatch[model], true
}
