package engine

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/reelforge/reelforge/sdk/errcode"
)

// A call that ends cancelled while its caller's context is live is a connection torn down under it
// (the plugin's client closed while the plugin was being killed): the plugin is unavailable. Only
// a caller that cancelled gets WORKFLOW_CANCELLED.
func TestCallErrCancelledConnection(t *testing.T) {
	t.Parallel()
	closing := status.Error(codes.Canceled, "grpc: the client connection is closing")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := map[string]struct {
		ctx  context.Context
		err  error
		want errcode.Code
	}{
		"connection closed under a live call": {ctx: context.Background(), err: closing, want: errcode.ExternalService},
		"caller cancelled":                    {ctx: cancelled, err: closing, want: errcode.WorkflowCancelled},
		"the engine's own cancellation":       {ctx: context.Background(), err: toStatus(errcode.New(errcode.WorkflowCancelled, "stopped")), want: errcode.WorkflowCancelled},
		"plugin gone":                         {ctx: context.Background(), err: status.Error(codes.Unavailable, "EOF"), want: errcode.ExternalService},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := errcode.Of(callErr(tt.ctx, "engine.Run", tt.err)); got != tt.want {
				t.Errorf("callErr(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}
