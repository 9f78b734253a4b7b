package kb

import "testing"

// The forms of an English word are one stem, those of a word ending in e too; two different words
// that differ by a final e are not.
func TestStem(t *testing.T) {
	t.Parallel()
	same := [][]string{
		{"cost", "costs", "costing", "costed"},
		{"name", "names", "named", "naming"},
		{"release", "releases", "released", "releasing"},
		{"episode", "episodes"},
		{"price", "prices", "priced"},
		{"plan", "plans", "planned", "planning"},
		{"hope", "hoped", "hoping"},
		{"study", "studies"},
	}
	for _, forms := range same {
		for _, f := range forms[1:] {
			if stem(f) != stem(forms[0]) {
				t.Errorf("stem(%q) = %q, stem(%q) = %q; want one stem", f, stem(f), forms[0], stem(forms[0]))
			}
		}
	}
	for _, pair := range [][2]string{{"plane", "plan"}, {"note", "not"}, {"hope", "hop"}, {"hoping", "hopping"}, {"bite", "bit"}} {
		if stem(pair[0]) == stem(pair[1]) {
			t.Errorf("stem(%q) = stem(%q) = %q; want two stems", pair[0], pair[1], stem(pair[0]))
		}
	}
}
