// Package results reads simulation run directories: summary.json (configuration and headline
// metrics), jobs.csv (one row per job) and util.csv (cluster occupancy over time), in the
// format of docs/results-format.md. The filesystem is the registry: Discover finds run
// directories under a root.
//
// The package only reads and validates; it computes nothing beyond parsing. Parse errors name
// the file, line and column.
package results
