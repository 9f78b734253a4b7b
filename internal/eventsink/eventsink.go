// Package eventsink is, for tests, the receiving end of the host's outbound events: an HTTP
// server that counts each delivery by its X-Event-Id, so a test that kills or starves the host
// (host/crashtest, host/faulttest) can tell events delivered from events delivered again.
package eventsink

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Sink counts deliveries by event id.
type Sink struct {
	URL  string // where the host sends its events (AUTOMATION_EVENT_WEBHOOK_URL)
	mu   sync.Mutex
	seen map[string]int
}

// New starts a sink, closed when the test ends.
func New(t testing.TB) *Sink {
	s := &Sink{seen: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get("X-Event-Id")
		s.mu.Lock()
		s.seen[id]++
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Counts answers how many events came and how many deliveries repeated one.
func (s *Sink) Counts() (events, repeats int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.seen {
		events++
		repeats += n - 1
	}
	return events, repeats
}

// Take is Counts, forgetting what came: the next Take counts from here.
func (s *Sink) Take() (events, repeats int) {
	events, repeats = s.Counts()
	s.mu.Lock()
	s.seen = map[string]int{}
	s.mu.Unlock()
	return events, repeats
}
