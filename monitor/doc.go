// Package monitor shows a run of pipedbn while it goes: it holds the state of
// one `master run` (Run) or of a `master sweep` (Sweep), fed from the
// observation points a run already has (the pipeline's Hooks, with every
// RBM's statistics from its slave's reports; the cluster's Joined, Lost,
// Recovered and Checkpointed callbacks; the phases of dbn.Run), and serves
// it over HTTP: /api/status as JSON, /metrics in Prometheus's text
// format, through a registry of its own, and at / a live status page
// (embedded in the binary: its script polls /api/status and draws the run,
// or the sweep's grid, with inline SVG curves).
//
// The state is a view: it never feeds back into training, and every
// observation costs a mutex, a few additions and a copy of the per-epoch
// errors; what is served is computed when it is asked for. Prometheus counters only grow: they are sums of
// the increments between successive reports of an RBM, so a report that
// goes back (a replacement resuming from a checkpoint) adds nothing and
// becomes the base the next one grows from.
package monitor
