// Package layering holds no code: its test checks the module's import rules (which package may
// import which), so `make test` and `make lint` fail when a change makes a dependency point the
// wrong way. The rules are in layering_test.go and explained in CONTRIBUTING.md ("Layers").
package layering
