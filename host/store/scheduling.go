package store

// Scheduling stores strategy tasks and the auto_runs marks of projects.
type Scheduling interface {
}
