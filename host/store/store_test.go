package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reelforge/reelforge/host/store"
)

// halfDriver is a database whose transactions lack a method its callers declare: a driver that
// breaks InTx's rule (its transaction is a Driver of its own kind). The conformance suite runs
// InTx on the real drivers; this checks the error that replaces a panic.
type halfDriver struct{}

func (halfDriver) InTx(ctx context.Context, fn func(tx store.Driver) error) error {
	return fn(struct{ store.Driver }{})
}

func (halfDriver) Extra() {}

type wantsExtra interface {
	store.Transactor
	Extra()
}

func TestInTxTransactionWithoutTheInterface(t *testing.T) {
	called := false
	err := store.InTx[wantsExtra](t.Context(), halfDriver{}, func(wantsExtra) error { called = true; return nil })
	if err == nil || called || !strings.Contains(err.Error(), "wantsExtra") {
		t.Errorf("InTx = %v (fn called: %v); want an error naming the interface, fn not called", err, called)
	}
	boom := errors.New("boom")
	var db wantsExtra = halfDriver{}
	if err := store.InTx(t.Context(), store.Transactor(db), func(store.Transactor) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("InTx = %v, want fn's error", err)
	}
}
