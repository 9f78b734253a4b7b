package store

// Runs stores workflow runs, trace steps and jobs.
type Runs interface {
}
