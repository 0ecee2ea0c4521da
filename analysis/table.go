package analysis

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/template"
)

// Table is a computed table: a title, a header, rows of formatted cells and notes (caveats
// and definitions) that are printed under the table in every format.
type Table struct {
	// Title names the table; empty for none.
	Title string
	// Header holds the column names, with units.
	Header []string
	// Rows holds the formatted cells; every row has len(Header) cells.
	Rows [][]string
	// Notes are printed under the table, one per line.
	Notes []string
}

// Format is an output format for tables.
type Format string

// The table formats.
const (
	// Text is a boxed plain-text table for terminals.
	Text Format = "text"
	// Markdown is a GitHub-flavoured Markdown table.
	Markdown Format = "md"
	// CSV is RFC 4180 CSV; the title and the notes are "# " comment lines.
	CSV Format = "csv"
	// LaTeX is a booktabs table environment.
	LaTeX Format = "latex"
)

// ParseFormat accepts text, md (or markdown), csv and latex (or tex).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "text", "txt":
		return Text, nil
	case "md", "markdown":
		return Markdown, nil
	case "csv":
		return CSV, nil
	case "latex", "tex":
		return LaTeX, nil
	}
	return "", fmt.Errorf("unknown table format %q (known: text, md, csv, latex)", s)
}

// Render writes t to w in format f.
func (t *Table) Render(w io.Writer, f Format) error {
	var buf bytes.Buffer
	var err error
	switch f {
	case Text:
		err = t.renderText(&buf)
	case Markdown:
		t.renderMarkdown(&buf)
	case CSV:
		err = t.renderCSV(&buf)
	case LaTeX:
		err = t.renderLaTeX(&buf)
	default:
		return fmt.Errorf("analysis: unknown table format %q", f)
	}
	if err != nil {
		return fmt.Errorf("analysis: render %q: %w", t.Title, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// RenderAll writes several tables in format f, separated by a blank line.
func RenderAll(w io.Writer, f Format, tables ...Table) error {
	for i := range tables {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := tables[i].Render(w, f); err != nil {
			return err
		}
	}
	return nil
}

// cell returns row r, column c, or "" when the row is short.
func (t *Table) cell(r, c int) string {
	if c < len(t.Rows[r]) {
		return t.Rows[r][c]
	}
	return ""
}

// numericColumns reports, per column, whether every non-empty cell looks like a number
// (possibly with a sign, ±, %, or a placeholder dash), so that it is right-aligned.
func (t *Table) numericColumns() []bool {
	out := make([]bool, len(t.Header))
	for c := range t.Header {
		num, any := true, false
		for r := range t.Rows {
			s := t.cell(r, c)
			if s == "" || s == "–" || s == "n/a" {
				continue
			}
			any = true
			if !looksNumeric(s) {
				num = false
				break
			}
		}
		out[c] = num && any
	}
	return out
}

// looksNumeric reports whether s is one or more numbers, possibly signed (+, -, −), with
// percent signs, ±, brackets or commas around them: "−31.7", "[−35.1, −28.4]", "62.7".
func looksNumeric(s string) bool {
	s = strings.NewReplacer("−", "-", "±", " ", "[", " ", "]", " ", ",", " ", "%", " ").Replace(s)
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return false
	}
	for _, f := range fields {
		if _, err := strconv.ParseFloat(f, 64); err != nil {
			return false
		}
	}
	return true
}

// oneLine replaces line breaks so a note stays on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func (t *Table) renderMarkdown(w *bytes.Buffer) {
	esc := func(s string) string {
		s = strings.ReplaceAll(s, `\`, `\\`)
		s = strings.ReplaceAll(s, "|", `\|`)
		return oneLine(s)
	}
	if t.Title != "" {
		fmt.Fprintf(w, "**%s**\n\n", esc(t.Title))
	}
	num := t.numericColumns()
	w.WriteString("|")
	for _, h := range t.Header {
		fmt.Fprintf(w, " %s |", esc(h))
	}
	w.WriteString("\n|")
	for c := range t.Header {
		if num[c] {
			w.WriteString("---:|")
		} else {
			w.WriteString("---|")
		}
	}
	w.WriteString("\n")
	for r := range t.Rows {
		w.WriteString("|")
		for c := range t.Header {
			fmt.Fprintf(w, " %s |", esc(t.cell(r, c)))
		}
		w.WriteString("\n")
	}
	if len(t.Notes) > 0 {
		w.WriteString("\n")
		for _, n := range t.Notes {
			fmt.Fprintf(w, "- %s\n", esc(n))
		}
	}
}

func (t *Table) renderCSV(w *bytes.Buffer) error {
	if t.Title != "" {
		fmt.Fprintf(w, "# %s\n", oneLine(t.Title))
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(t.Header); err != nil {
		return err
	}
	for r := range t.Rows {
		row := make([]string, len(t.Header))
		for c := range row {
			row[c] = t.cell(r, c)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	for _, n := range t.Notes {
		fmt.Fprintf(w, "# %s\n", oneLine(n))
	}
	return nil
}

// latexTemplate renders a booktabs table; every string is escaped before it reaches the
// template.
const latexTemplate = `\begin{table}[tbp]
\centering
{{- if .Title}}
\caption{ {{- .Title -}} }
{{- end}}
\begin{tabular}{ {{- .Spec -}} }
\toprule
{{join .Header " & "}} \\
\midrule
{{- range .Rows}}
{{join . " & "}} \\
{{- end}}
\bottomrule
\end{tabular}
{{- if .Notes}}
\par\smallskip
\begin{minipage}{\linewidth}\footnotesize
{{- range .Notes}}
{{.}}\par
{{- end}}
\end{minipage}
{{- end}}
\end{table}
`

func (t *Table) renderLaTeX(w *bytes.Buffer) error {
	tmpl, err := template.New("latex").Funcs(template.FuncMap{"join": strings.Join}).Parse(latexTemplate)
	if err != nil {
		return err
	}
	num := t.numericColumns()
	var spec strings.Builder
	for c := range t.Header {
		if num[c] {
			spec.WriteByte('r')
		} else {
			spec.WriteByte('l')
		}
	}
	data := struct {
		Title, Spec string
		Header      []string
		Rows        [][]string
		Notes       []string
	}{Title: LaTeXEscape(t.Title), Spec: spec.String()}
	for _, h := range t.Header {
		data.Header = append(data.Header, LaTeXEscape(h))
	}
	for r := range t.Rows {
		row := make([]string, len(t.Header))
		for c := range row {
			row[c] = LaTeXEscape(t.cell(r, c))
		}
		data.Rows = append(data.Rows, row)
	}
	for _, n := range t.Notes {
		data.Notes = append(data.Notes, LaTeXEscape(n))
	}
	return tmpl.Execute(w, data)
}

// LaTeXEscape escapes the LaTeX special characters of s (\ { } $ & % # _ ~ ^ < > |) and writes
// the non-ASCII symbols used in tables (Δ ξ ± − × ÷ ≤ ≥ … – — →) as LaTeX commands.
func LaTeXEscape(s string) string {
	var b strings.Builder
	for _, r := range oneLine(s) {
		switch r {
		case '\\':
			b.WriteString(`\textbackslash{}`)
		case '{', '}', '$', '&', '%', '#', '_':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '~':
			b.WriteString(`\textasciitilde{}`)
		case '^':
			b.WriteString(`\textasciicircum{}`)
		case '<':
			b.WriteString(`\textless{}`)
		case '>':
			b.WriteString(`\textgreater{}`)
		case '|':
			b.WriteString(`\textbar{}`)
		case 'Δ':
			b.WriteString(`\ensuremath{\Delta}`)
		case 'ξ':
			b.WriteString(`\ensuremath{\xi}`)
		case '±':
			b.WriteString(`\ensuremath{\pm}`)
		case '−':
			b.WriteString(`\ensuremath{-}`)
		case '×':
			b.WriteString(`\ensuremath{\times}`)
		case '÷':
			b.WriteString(`\ensuremath{\div}`)
		case '≤':
			b.WriteString(`\ensuremath{\leq}`)
		case '≥':
			b.WriteString(`\ensuremath{\geq}`)
		case '→':
			b.WriteString(`\ensuremath{\rightarrow}`)
		case '…':
			b.WriteString(`\ldots{}`)
		case '–':
			b.WriteString(`--`)
		case '—':
			b.WriteString(`---`)
		case '√':
			b.WriteString(`\ensuremath{\surd}`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
