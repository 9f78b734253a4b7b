package events_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/reelforge/reelforge/host/events"
)

// A receiver recomputes the HMAC of the exact body and compares it with X-Webhook-Signature,
// then drops repeats by the payload's id (delivery is at least once).
func ExampleVerify() {
	const secret = "the AUTOMATION_WEBHOOK_SECRET"
	seen := map[string]bool{}
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !events.Verify(secret, body, r.Header.Get("X-Webhook-Signature")) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		id := r.Header.Get("X-Event-Id")
		if !seen[id] {
			seen[id] = true
			fmt.Println("accepted", r.Header.Get("X-Event-Type"))
		}
		w.WriteHeader(http.StatusNoContent)
	})

	body := `{"id":"5f0c...","event":"job.completed","timestamp":"2026-01-01T09:00:00Z","data":{},"meta":{"source":"reelforge","version":"1.0"}}`
	for _, sig := range []string{events.Sign(secret, []byte(body)), events.Sign("a wrong secret", []byte(body))} {
		req := httptest.NewRequest(http.MethodPost, "/events", strings.NewReader(body))
		req.Header.Set("X-Webhook-Signature", sig)
		req.Header.Set("X-Event-Type", "job.completed")
		req.Header.Set("X-Event-Id", "5f0c...")
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// accepted job.completed
	// 204
	// 401
}
