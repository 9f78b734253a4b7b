package sqldb

import (
	"testing"
	"time"
)

// parseFixedTime must agree with time.Parse on the stored form and leave everything else to it.
func FuzzParseFixedTime(f *testing.F) {
	for _, s := range []string{"2026-11-22T01:02:03.456789Z", "2024-02-29T23:59:59.999999Z",
		"2026-02-31T00:00:00.000000Z", "2026-13-01T00:00:00.000000Z", "2026-01-01T00:00:60.000000Z", "2026-11-22 01:02:03", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseFixedTime(s)
		want, err := time.Parse(SQLiteTimeFormat, s)
		if ok && (err != nil || !got.Equal(want)) {
			t.Fatalf("parseFixedTime(%q) = %v, time.Parse = %v, %v", s, got, want, err)
		}
		if ok && got.Location() != time.UTC {
			t.Fatalf("parseFixedTime(%q) not in UTC", s)
		}
	})
}

func TestParseTimeText(t *testing.T) {
	want := time.Date(2026, 11, 22, 1, 2, 3, 456789000, time.UTC)
	for _, s := range []string{"2026-11-22T01:02:03.456789Z", "2026-11-22T02:02:03.456789+01:00"} {
		got, ok, err := parseTimeText(s)
		if err != nil || !ok || !got.Equal(want) {
			t.Errorf("parseTimeText(%q) = %v, %v, %v; want %v", s, got, ok, err, want)
		}
	}
	if _, _, err := parseTimeText("2026-02-31T00:00:00.000000Z"); err == nil {
		t.Error("31 February parsed")
	}
}
