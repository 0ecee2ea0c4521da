// Package analysis turns simulation runs (package results) and interference profiles (package
// profile) into the tables and figures of the paper reproduction.
//
// It works in two steps kept apart: compute (pure functions from runs to a Table or to plot
// data: Summarize, Claims, JobStats, ProfileTables, ...) and render (Table.Render to text,
// Markdown, CSV or LaTeX; Figure.Save to PNG, SVG or PDF). Caveats such as few seeds, missing
// baselines or missing profile pairs are returned as Table.Notes and printed under the table.
//
// Runs are grouped by experiment (label "experiment"), trace (label "trace", else the trace
// file) and series (label "variant", else the policy). Analysis never imports sim or policy,
// reads no clock and draws no random numbers, so equal inputs give equal bytes.
package analysis
