package plugins

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Set owns the supervisors of several engines. Build it with NewSet, then Start and Stop it once
// each (not concurrently); the other methods are safe for concurrent use.
type Set struct {
	mu   sync.RWMutex
	sups map[string]*Supervisor
	ctx  context.Context // Start's, for the supervisors Apply adds
}

// NewSet returns a Set with one Supervisor per config. Names must be unique.
func NewSet(cfgs ...Config) (*Set, error) {
	s := &Set{sups: make(map[string]*Supervisor, len(cfgs))}
	for _, c := range cfgs {
		if c.Name == "" {
			return nil, errcode.Invalid("name", "engine name is required")
		}
		if _, dup := s.sups[c.Name]; dup {
			return nil, errcode.Invalid("name", fmt.Sprintf("engine %q configured twice", c.Name))
		}
		s.sups[c.Name] = New(c)
	}
	return s, nil
}

// Start starts every supervisor. It returns the joined errors of the engines that could not start
// (their state stays disabled); the others keep running. Each supervisor's goroutine exits when
// ctx ends or Stop is called.
func (s *Set) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	var errs []error
	for _, name := range s.Names() {
		sup, _ := s.Supervisor(name)
		if err := sup.Start(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stop stops every supervisor and kills its plugin process. When it returns, no supervising
// goroutine of the Set runs and every plugin was asked to exit (go-plugin waits up to 2 s for each
// before killing it).
func (s *Set) Stop() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sup := range s.sups {
		sup.Stop()
	}
}

// Apply makes the Set supervise exactly cfgs (a reload of the engine registry): it starts the
// supervisors of engines it did not have, stops those of engines no longer given, and restarts
// those whose launch changed (binary, sha256, settings). The others keep their running plugin.
// It returns the joined errors of the engines that could not start. Call it after Start.
func (s *Set) Apply(cfgs []Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]Config{}
	for _, c := range cfgs {
		want[c.Name] = c
	}
	for name, sup := range s.sups {
		if c, ok := want[name]; !ok || !sameLaunch(sup.orig, c) {
			sup.Stop()
			delete(s.sups, name)
		}
	}
	var errs []error
	for name, c := range want {
		if _, ok := s.sups[name]; ok {
			continue
		}
		sup := New(c)
		s.sups[name] = sup
		if s.ctx != nil {
			if err := sup.Start(s.ctx); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// sameLaunch reports whether two configs launch the same plugin the same way.
func sameLaunch(a, b Config) bool {
	return a.Name == b.Name && a.Dir == b.Dir && a.Binary == b.Binary && a.SHA256 == b.SHA256 && slices.Equal(a.Env, b.Env)
}

// Names returns the engine names, sorted.
func (s *Set) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.sups))
	for n := range s.sups {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Supervisor returns the supervisor of the engine name.
func (s *Set) Supervisor(name string) (*Supervisor, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sup, ok := s.sups[name]
	return sup, ok
}

// Engine returns the live plugin Engine of name, or an EXTERNAL_SERVICE_ERROR when it is not
// ready or not configured: the caller then runs the workflow on the in-process node engine.
func (s *Set) Engine(name string) (engine.Engine, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sup, ok := s.sups[name]
	if !ok {
		return nil, errcode.E("plugins.Engine", errcode.ExternalService, fmt.Sprintf("engine %s has no plugin", name), nil)
	}
	return sup.Engine()
}

// States returns the state of every engine, for /health.
func (s *Set) States() map[string]State { return perEngine(s, (*Supervisor).State) }

// Restarts returns how many times each engine's plugin was restarted, for the metrics.
func (s *Set) Restarts() map[string]int { return perEngine(s, (*Supervisor).Restarts) }

// perEngine maps every engine's name to what f reads of its supervisor.
func perEngine[T any](s *Set, f func(*Supervisor) T) map[string]T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]T, len(s.sups))
	for n, sup := range s.sups {
		out[n] = f(sup)
	}
	return out
}

// Detail is an engine's detailed state (Detail* constants) and why it is not ready.
type Detail struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Details returns the detailed state of every engine, for /health and plugins check.
func (s *Set) Details() map[string]Detail {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]Detail, len(s.sups))
	for n, sup := range s.sups {
		st, r := sup.Detail()
		out[n] = Detail{State: st, Reason: r}
	}
	return out
}
