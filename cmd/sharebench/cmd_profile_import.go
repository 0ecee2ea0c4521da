package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sharebench/sharebench/profile"
	"github.com/sharebench/sharebench/profile/interleave"
)

const profileImportLong = `Convert public measurements into a sharebench profile (docs/profile-import.md).

Sources (--from):
  gavel    FILE = Gavel's simulation_throughputs.json or physical_cluster_throughputs.json; needs --gpu
  blox     FILE = Blox's norm_speed.csv; solo times from --solo-from, or placeholders with --relative
  pollux   FILE... = Pollux trace directories: one application (…/imagenet) or their parent (…/pollux-step-times)
  authors  the SJF-BSBF authors' --ratio ratio.json and --itertime itertime.json
  muri     FILE... = Muri-dialect traces (data/traces/muri-philly): their iteration times, and pair
           slowdowns from Muri's interleaving model of their stage times
  profile  FILE = a sharebench profile (to re-export it with --export-authors)`

// profileImportOpts are the flags of "sharebench profile import".
type profileImportOpts struct {
	from, gpu, out, soloFrom, ratio, itertime, exportDir, exportMap string
	memGiB                                                          float64
	relative                                                        bool
	maxAccum                                                        int
	exportGPUs                                                      []int
}

func newProfileImportCmd() *cobra.Command {
	var o profileImportOpts
	cmd := &cobra.Command{
		Use:     "import --from SOURCE [flags] FILE... [--out PROFILE.json] [--export-authors DIR]",
		Short:   "import public measurements (gavel, blox, pollux, authors) into a profile",
		Long:    profileImportLong,
		Example: "  sharebench profile import --from gavel --gpu V100 simulation_throughputs.json --out gavel-v100.json",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(args, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.from, "from", "", "source: gavel, blox, pollux, authors, muri or profile (required)")
	fs.StringVar(&o.gpu, "gpu", "", "gavel: worker type K80, P100 or V100")
	fs.Float64Var(&o.memGiB, "mem-gib", 0, "GPU memory in GiB written as gpu_mem_bytes (default: the source's nominal value)")
	fs.StringVar(&o.out, "out", "", "write the profile to this `file`")
	fs.StringVar(&o.soloFrom, "solo-from", "", "blox: take solo iter_s and memory from this profile `file`")
	fs.BoolVar(&o.relative, "relative", false, "blox: allow placeholder iter_s = 1.0 (normalized) where no solo time is known")
	fs.IntVar(&o.maxAccum, "max-accum", 8, "pollux: largest accumulation factor k of the (k·b, b) configurations")
	fs.StringVar(&o.ratio, "ratio", "", "authors: ratio.json `file`")
	fs.StringVar(&o.itertime, "itertime", "", "authors: itertime.json `file`")
	fs.StringVar(&o.exportDir, "export-authors", "", "also write the profile as the authors' ratio.json and itertime.json into this `directory`")
	fs.StringVar(&o.exportMap, "model-map", "", "with --export-authors: export the authors' eight models through this model-map `file` (as the traces run)")
	fs.IntSliceVar(&o.exportGPUs, "gpu-counts", nil, "with --export-authors: the GPU `counts` to write (default with --model-map: 1,2,4,8,16,32; else those measured)")
	required(cmd, "from")
	completeValues(cmd, "from", "gavel", "blox", "pollux", "authors", "muri", "profile")
	completeValues(cmd, "gpu", "K80", "P100", "V100")
	completeFiles(cmd, []string{"json"}, "out", "solo-from", "ratio", "itertime")
	completeDirs(cmd, "export-authors")
	completeFiles(cmd, []string{"csv"}, "model-map")
	return cmd
}

// run implements "sharebench profile import".
func (o *profileImportOpts) run(files []string, stdout io.Writer) error {
	if o.out == "" && o.exportDir == "" {
		return usagef("profile import: give --out PROFILE.json and/or --export-authors DIR")
	}
	for _, in := range append([]string{o.soloFrom, o.ratio, o.itertime}, files...) {
		if o.out != "" && sameFile(o.out, in) {
			return usagef("profile import: --out %s is an input; write the profile to another file", o.out)
		}
	}
	memBytes := int64(0)
	if o.memGiB < 0 {
		return fmt.Errorf("profile import: --mem-gib must be ≥ 0, got %v", o.memGiB)
	}
	if o.memGiB > 0 {
		memBytes = int64(o.memGiB * (1 << 30))
	}
	needFiles := func(n int) error {
		if len(files) != n {
			return usagef("profile import --from %s: want %d input file(s), got %d", o.from, n, len(files))
		}
		return nil
	}

	// cmdline is the canonical command recorded in the provenance: parsed values, file
	// arguments as given, without --out and --export-authors (where results go is no provenance).
	cmdline := []string{"sharebench", "profile", "import", "--from", o.from}
	var t *profile.Table
	var err error
	switch o.from {
	case "gavel":
		if err := needFiles(1); err != nil {
			return err
		}
		if o.gpu == "" {
			return errors.New("profile import --from gavel: --gpu K80|P100|V100 is required")
		}
		g := strings.ToLower(o.gpu)
		cmdline = append(cmdline, "--gpu", g)
		t, err = withFile(files[0], func(r io.Reader, name string) (*profile.Table, error) {
			return profile.ImportGavel(r, name, profile.GavelOptions{GPU: g, GPUMemBytes: memBytes})
		})
	case "blox":
		if err := needFiles(1); err != nil {
			return err
		}
		opts := profile.BloxOptions{Relative: o.relative, GPUMemBytes: memBytes}
		if o.soloFrom != "" {
			if opts.Solo, err = profile.LoadFile(o.soloFrom); err != nil {
				return fmt.Errorf("profile import: --solo-from: %w", err)
			}
			opts.SoloName = filepath.Base(o.soloFrom)
			cmdline = append(cmdline, "--solo-from", o.soloFrom)
		}
		if o.relative {
			cmdline = append(cmdline, "--relative")
		}
		t, err = withFile(files[0], func(r io.Reader, name string) (*profile.Table, error) {
			return profile.ImportBlox(r, name, opts)
		})
	case "pollux":
		if len(files) == 0 {
			return errors.New("profile import --from pollux: give one or more trace directories")
		}
		if o.maxAccum != 8 {
			cmdline = append(cmdline, "--max-accum", strconv.Itoa(o.maxAccum))
		}
		if o.maxAccum < 1 {
			return fmt.Errorf("profile import: --max-accum must be ≥ 1, got %d", o.maxAccum)
		}
		t, err = importPollux(files, profile.PolluxOptions{MaxAccum: o.maxAccum, GPUMemBytes: memBytes})
	case "authors":
		if o.ratio == "" || o.itertime == "" {
			return errors.New("profile import --from authors: --ratio and --itertime are required")
		}
		if err := needFiles(0); err != nil {
			return err
		}
		cmdline = append(cmdline, "--ratio", o.ratio, "--itertime", o.itertime)
		t, err = importAuthors(o.ratio, o.itertime)
	case "muri":
		if len(files) == 0 {
			return errors.New("profile import --from muri: give one or more Muri-dialect trace files")
		}
		t, err = interleave.FromTraces(files)
	case "profile":
		if err := needFiles(1); err != nil {
			return err
		}
		t, err = profile.LoadFile(files[0])
	case "":
		return usagef("profile import: --from is required")
	default:
		return usagef("profile import: unknown source %q (known: gavel, blox, pollux, authors, muri, profile)", o.from)
	}
	if err != nil {
		return err
	}
	if o.memGiB > 0 {
		cmdline = append(cmdline, "--mem-gib", strconv.FormatFloat(o.memGiB, 'g', -1, 64))
		if o.from == "authors" || o.from == "profile" {
			t.GPUMemBytes = memBytes
		}
	}
	if o.from != "profile" {
		t.Provenance.Command = strings.Join(append(cmdline, files...), " ")
	}
	if o.out != "" {
		if err := t.WriteFile(o.out); err != nil {
			return fmt.Errorf("profile import: %w", err)
		}
		configs := 0
		for _, m := range t.Models {
			configs += len(m.Configs)
		}
		fmt.Fprintf(stdout, "wrote %s: %d models, %d configurations, %d pairs, %d notes\n", o.out, len(t.Models), configs, len(t.Pairs), len(t.Notes))
	}
	if o.exportDir != "" {
		opt := profile.ExportOptions{GPUs: o.exportGPUs}
		if o.exportMap != "" {
			if opt.ModelMap, err = profile.LoadModelMapFile(o.exportMap); err != nil {
				return err
			}
		}
		if err := exportAuthors(t, o.exportDir, opt); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(o.exportDir, "ratio.json"), filepath.Join(o.exportDir, "itertime.json"))
	}
	return nil
}

// withFile opens path and passes it to f with its base name as the label.
func withFile(path string, f func(io.Reader, string) (*profile.Table, error)) (*profile.Table, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("profile import: %w", err)
	}
	defer file.Close()
	return f(file, filepath.Base(path))
}

// importPollux imports Pollux trace directories: each argument is one application directory
// (holding placements.csv) or a directory of such application directories. All must share one
// parent.
func importPollux(dirs []string, opts profile.PolluxOptions) (*profile.Table, error) {
	root := ""
	var models []string
	for _, d := range dirs {
		d = filepath.Clean(d)
		var parent string
		var names []string
		if _, err := os.Stat(filepath.Join(d, "placements.csv")); err == nil {
			parent, names = filepath.Dir(d), []string{filepath.Base(d)}
		} else {
			entries, err := os.ReadDir(d)
			if err != nil {
				return nil, fmt.Errorf("profile import: %w", err)
			}
			for _, e := range entries {
				if _, err := os.Stat(filepath.Join(d, e.Name(), "placements.csv")); e.IsDir() && err == nil {
					names = append(names, e.Name())
				}
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("profile import: %s: no placements.csv in it or its subdirectories", d)
			}
			parent = d
		}
		if root != "" && root != parent {
			return nil, fmt.Errorf("profile import: Pollux directories must share one parent (%s, %s)", root, parent)
		}
		root = parent
		models = append(models, names...)
	}
	return profile.ImportPollux(os.DirFS(root), models, opts)
}

// importAuthors reads the authors' two tables.
func importAuthors(ratioPath, itertimePath string) (*profile.Table, error) {
	r, err := os.Open(ratioPath)
	if err != nil {
		return nil, fmt.Errorf("profile import: %w", err)
	}
	defer r.Close()
	i, err := os.Open(itertimePath)
	if err != nil {
		return nil, fmt.Errorf("profile import: %w", err)
	}
	defer i.Close()
	return profile.ImportAuthors(r, i, profile.AuthorsOptions{RatioName: filepath.Base(ratioPath), IterTimeName: filepath.Base(itertimePath)})
}

// exportAuthors writes dir/ratio.json and dir/itertime.json.
func exportAuthors(t *profile.Table, dir string, opt profile.ExportOptions) error {
	var ratio, iter bytes.Buffer
	if err := t.ExportAuthors(&ratio, &iter, opt); err != nil {
		return fmt.Errorf("profile import: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("profile import: %w", err)
	}
	for name, b := range map[string][]byte{"ratio.json": ratio.Bytes(), "itertime.json": iter.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("profile import: %w", err)
		}
	}
	return nil
}
