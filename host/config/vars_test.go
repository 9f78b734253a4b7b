package config

import (
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestVarsListWhatLoadFromReads: every variable LoadFrom asks for is in Vars, and every entry of
// Vars is read by LoadFrom or names who reads it (ReadBy).
func TestVarsListWhatLoadFromReads(t *testing.T) {
	t.Parallel()
	asked := map[string]bool{}
	if _, err := LoadFrom(func(k string) (string, bool) {
		asked[strings.TrimSuffix(k, "_FILE")] = true
		return "", false
	}); err != nil {
		t.Fatal(err)
	}
	listed := map[string]Var{}
	for _, v := range Vars {
		for _, n := range strings.Split(v.Name, ", ") {
			if _, dup := listed[n]; dup {
				t.Errorf("%s is listed twice in Vars", n)
			}
			listed[n] = v
		}
	}
	var missing []string
	for n := range asked {
		if _, ok := listed[n]; !ok {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("LoadFrom reads %v, which Vars (vars.go) does not document", missing)
	}
	for n, v := range listed {
		if !asked[n] && v.ReadBy == "" {
			t.Errorf("Vars lists %s, which LoadFrom does not read (set ReadBy if another package does)", n)
		}
		if asked[n] && v.ReadBy != "" {
			t.Errorf("Vars says %s is read by %s, but LoadFrom reads it", n, v.ReadBy)
		}
	}
}

// TestVarsDefaults: setting a variable to its documented default changes nothing.
func TestVarsDefaults(t *testing.T) {
	t.Parallel()
	want, err := LoadFrom(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	want.lookup = nil
	for _, v := range Vars {
		if v.Default == "" || v.ReadBy != "" {
			continue
		}
		for _, n := range strings.Split(v.Name, ", ") {
			got, err := LoadFrom(lookup(map[string]string{n: v.Default}))
			if err != nil {
				t.Errorf("%s=%s (its documented default): %v", n, v.Default, err)
				continue
			}
			got.lookup = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s=%s (its documented default) gives a configuration other than the defaults", n, v.Default)
			}
		}
		if v.Default != "" && v.Shown != "" {
			t.Errorf("%s: Default and Shown both set", v.Name)
		}
	}
}

// TestREADMETable: the README's table is Table (go generate ./host/config writes it).
func TestREADMETable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(string(b))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if want != string(b) {
		t.Error("README.md's configuration table differs from host/config/vars.go: run go generate ./host/config")
	}
}
