package runs

import (
	"context"
	"testing"
)

// TestSlotNotTakenAfterTheExecutionEnded: a WaitJob of a run returning after the run's execution
// ended (the handler of a killed plugin's Host call outlives the plugin's Run) does not take an
// executor slot: nothing would give it back, and the host would execute one run fewer at once
// from then on, down to none.
func TestSlotNotTakenAfterTheExecutionEnded(t *testing.T) {
	for name, ctxDone := range map[string]bool{"caller live": false, "caller gone": true} {
		t.Run(name, func(t *testing.T) {
			slots := make(chan struct{}, 1)
			slots <- struct{}{} // the slot the execution was claimed with
			ex := &execution{slots: slots, holds: true}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reacquire := ex.yield(ctx) // a Host WaitJob of the run: the slot is given back
			if len(slots) != 0 {
				t.Fatal("yield kept the slot")
			}
			ex.done() // the plugin died; the run went on elsewhere and its execution ended
			if ctxDone {
				cancel()
			}
			for range 20 { // select between a free slot and a done context picks at random
				reacquire()
				if len(slots) != 0 {
					t.Fatalf("a WaitJob returning after its execution ended took a slot that nobody gives back")
				}
			}
		})
	}
}
