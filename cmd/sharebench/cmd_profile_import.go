package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sharebench/sharebench/profile"
)

const profileImportUsage = `usage: sharebench profile import --from SOURCE [flags] FILE... [--out PROFILE.json] [--export-authors DIR]

Convert public measurements into a sharebench profile (docs/profile-import.md).

sources:
  gavel    FILE = Gavel's simulation_throughputs.json or physical_cluster_throughputs.json; needs --gpu
  blox     FILE = Blox's norm_speed.csv; solo times from --solo-from, or placeholders with --relative
  pollux   FILE... = Pollux trace directories: one application (…/imagenet) or their parent (…/pollux-step-times)
  authors  the SJF-BSBF authors' --ratio ratio.json and --itertime itertime.json
  profile  FILE = a sharebench profile (to re-export it with --export-authors)

flags:
`

// profileImport implements "sharebench profile import".
func profileImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("profile import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		from      = fs.String("from", "", "source: gavel, blox, pollux, authors or profile")
		gpu       = fs.String("gpu", "", "gavel: worker type K80, P100 or V100")
		memGiB    = fs.Float64("mem-gib", 0, "GPU memory in GiB written as gpu_mem_bytes (default: the source's nominal value)")
		out       = fs.String("out", "", "write the profile to this file")
		soloFrom  = fs.String("solo-from", "", "blox: take solo iter_s and memory from this profile")
		relative  = fs.Bool("relative", false, "blox: allow placeholder iter_s = 1.0 (normalized) where no solo time is known")
		maxAccum  = fs.Int("max-accum", 8, "pollux: largest accumulation factor k of the (k·b, b) configurations")
		ratio     = fs.String("ratio", "", "authors: ratio.json")
		itertime  = fs.String("itertime", "", "authors: itertime.json")
		exportDir = fs.String("export-authors", "", "also write the profile as the authors' ratio.json and itertime.json into this directory")
	)
	fs.Usage = func() {
		fmt.Fprint(stderr, profileImportUsage)
		fs.PrintDefaults()
	}
	// Parse flags and file arguments in any order.
	var files []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return fmt.Errorf("profile import: %w", err)
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if *out == "" && *exportDir == "" {
		return errors.New("profile import: give --out PROFILE.json and/or --export-authors DIR")
	}
	memBytes := int64(0)
	if *memGiB < 0 {
		return fmt.Errorf("profile import: --mem-gib must be ≥ 0, got %v", *memGiB)
	}
	if *memGiB > 0 {
		memBytes = int64(*memGiB * (1 << 30))
	}
	needFiles := func(n int) error {
		if len(files) != n {
			return fmt.Errorf("profile import --from %s: want %d input file(s), got %d", *from, n, len(files))
		}
		return nil
	}

	// cmdline is the canonical command recorded in the provenance: parsed values, file
	// arguments as given, without --out and --export-authors (where results go is no provenance).
	cmdline := []string{"sharebench", "profile", "import", "--from", *from}
	var t *profile.Table
	var err error
	switch *from {
	case "gavel":
		if err := needFiles(1); err != nil {
			return err
		}
		if *gpu == "" {
			return errors.New("profile import --from gavel: --gpu K80|P100|V100 is required")
		}
		g := strings.ToLower(*gpu)
		cmdline = append(cmdline, "--gpu", g)
		t, err = withFile(files[0], func(r io.Reader, name string) (*profile.Table, error) {
			return profile.ImportGavel(r, name, profile.GavelOptions{GPU: g, GPUMemBytes: memBytes})
		})
	case "blox":
		if err := needFiles(1); err != nil {
			return err
		}
		opts := profile.BloxOptions{Relative: *relative, GPUMemBytes: memBytes}
		if *soloFrom != "" {
			if opts.Solo, err = profile.LoadFile(*soloFrom); err != nil {
				return fmt.Errorf("profile import: --solo-from: %w", err)
			}
			opts.SoloName = filepath.Base(*soloFrom)
			cmdline = append(cmdline, "--solo-from", *soloFrom)
		}
		if *relative {
			cmdline = append(cmdline, "--relative")
		}
		t, err = withFile(files[0], func(r io.Reader, name string) (*profile.Table, error) {
			return profile.ImportBlox(r, name, opts)
		})
	case "pollux":
		if len(files) == 0 {
			return errors.New("profile import --from pollux: give one or more trace directories")
		}
		if *maxAccum != 8 {
			cmdline = append(cmdline, "--max-accum", strconv.Itoa(*maxAccum))
		}
		if *maxAccum < 1 {
			return fmt.Errorf("profile import: --max-accum must be ≥ 1, got %d", *maxAccum)
		}
		t, err = importPollux(files, profile.PolluxOptions{MaxAccum: *maxAccum, GPUMemBytes: memBytes})
	case "authors":
		if *ratio == "" || *itertime == "" {
			return errors.New("profile import --from authors: --ratio and --itertime are required")
		}
		if err := needFiles(0); err != nil {
			return err
		}
		cmdline = append(cmdline, "--ratio", *ratio, "--itertime", *itertime)
		t, err = importAuthors(*ratio, *itertime)
	case "profile":
		if err := needFiles(1); err != nil {
			return err
		}
		t, err = profile.LoadFile(files[0])
	case "":
		fs.Usage()
		return errors.New("profile import: --from is required")
	default:
		return fmt.Errorf("profile import: unknown source %q (known: gavel, blox, pollux, authors, profile)", *from)
	}
	if err != nil {
		return err
	}
	if *memGiB > 0 {
		cmdline = append(cmdline, "--mem-gib", strconv.FormatFloat(*memGiB, 'g', -1, 64))
		if *from == "authors" || *from == "profile" {
			t.GPUMemBytes = memBytes
		}
	}
	if *from != "profile" {
		t.Provenance.Command = strings.Join(append(cmdline, files...), " ")
	}
	if *out != "" {
		if err := t.WriteFile(*out); err != nil {
			return fmt.Errorf("profile import: %w", err)
		}
		configs := 0
		for _, m := range t.Models {
			configs += len(m.Configs)
		}
		fmt.Fprintf(stdout, "wrote %s: %d models, %d configurations, %d pairs, %d notes\n", *out, len(t.Models), configs, len(t.Pairs), len(t.Notes))
	}
	if *exportDir != "" {
		if err := exportAuthors(t, *exportDir); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(*exportDir, "ratio.json"), filepath.Join(*exportDir, "itertime.json"))
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
func exportAuthors(t *profile.Table, dir string) error {
	var ratio, iter bytes.Buffer
	if err := t.ExportAuthors(&ratio, &iter, profile.ExportOptions{}); err != nil {
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
