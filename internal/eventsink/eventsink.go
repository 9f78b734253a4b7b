// Package eventsink is, for tests, the receiving end of the host's outbound events: an HTTP
// server that counts each delivery by its X-Event-Id, so a test that kills or starves the host
// (host/crashtest, host/faulttest) can tell events delivered from events delivered again, and
// keeps what each event said (its name and data), so the test can tell which of the changes it
// made were announced.
package eventsink

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Event is what the sink received of one event: its name and data (of the first delivery) and
// how many times it was delivered.
type Event struct {
	Name       string
	Data       map[string]any
	Deliveries int
}

// Sink counts deliveries by event id.
type Sink struct {
	URL  string // where the host sends its events (AUTOMATION_EVENT_WEBHOOK_URL)
	mu   sync.Mutex
	seen map[string]*Event
}

// New starts a sink, closed when the test ends.
func New(t testing.TB) *Sink {
	s := &Sink{seen: map[string]*Event{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id := req.Header.Get("X-Event-Id")
		var p struct {
			Event string         `json:"event"`
			Data  map[string]any `json:"data"`
		}
		b, _ := io.ReadAll(req.Body)
		_ = json.Unmarshal(b, &p) // a body that is not the payload keeps a zero name and data
		s.mu.Lock()
		e := s.seen[id]
		if e == nil {
			e = &Event{Name: p.Event, Data: p.Data}
			s.seen[id] = e
		}
		e.Deliveries++
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
	for _, e := range s.seen {
		events++
		repeats += e.Deliveries - 1
	}
	return events, repeats
}

// Take is Counts, forgetting what came: the next Take counts from here.
func (s *Sink) Take() (events, repeats int) {
	events, repeats = s.Counts()
	s.mu.Lock()
	s.seen = map[string]*Event{}
	s.mu.Unlock()
	return events, repeats
}

// Events is a copy of what came so far, by event id.
func (s *Sink) Events() map[string]Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Event, len(s.seen))
	for id, e := range s.seen {
		out[id] = *e
	}
	return out
}
