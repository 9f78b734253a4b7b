package main

import "testing"

func TestFanOutSmall(t *testing.T) {
	t.Parallel()
	r, err := fanOut(t.Context(), t.TempDir(), 50, 5)
	if err != nil {
		t.Fatal(err)
	}
	if r.Delivered != 250 {
		t.Errorf("FanOut delivered %d frames, want 250", r.Delivered)
	}
	t.Logf("fan-out to 50 clients: p50 %.2f ms, p99 %.2f ms", r.P50MS, r.P99MS)
}
