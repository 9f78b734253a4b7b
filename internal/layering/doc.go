// Package layering holds no code: its tests check the module's import rules (which package may
// import which), so `make test` and `make lint` fail when a change makes a dependency point the
// wrong way, and that code outside host/store opens transactions only through store.InTx. The
// rules are in layering_test.go and transactions_test.go and explained in CONTRIBUTING.md
// ("Layers", "The store").
package layering
