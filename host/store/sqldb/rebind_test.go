package sqldb

import (
	"regexp"
	"testing"
)

// The placeholder rewrite must give what the regexp replacement it stands for gives.
func FuzzRebindSQLite(f *testing.F) {
	placeholder := regexp.MustCompile(`\$(\d+)`)
	for _, q := range []string{"", "$", "$1", "SELECT $1, $22 FROM t WHERE j = '$.a' AND x = $3$", "$$1", "a$9b$", "$x$0"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if got, want := RebindSQLite(q), placeholder.ReplaceAllString(q, "?$1"); got != want {
			t.Fatalf("RebindSQLite(%q) = %q, want %q", q, got, want)
		}
	})
}
