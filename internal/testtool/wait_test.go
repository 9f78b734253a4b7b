package testtool_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/reelforge/reelforge/internal/testtool"
)

func TestWithin(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	if !testtool.Within(5*time.Second, func() bool { return n.Load() == 3 }) {
		t.Fatal("a condition that comes true was not seen")
	}
	if testtool.Within(30*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported held")
	}
}
