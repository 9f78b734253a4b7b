package store

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzProjectAppendJSON holds AppendJSON to what encoding/json writes for the same project.
func FuzzProjectAppendJSON(f *testing.F) {
	f.Add("名前 <b>&</b>", "line\nbreak\t\"q\" \\ \x01 \u2028\u2029", "\xff\xfe bad utf-8", []byte(`{ "days": [1, 2], "html": "<a>" }`), int64(1763773323456789000), true)
	f.Add("", "", "", []byte(nil), int64(0), false)
	f.Add("x", "\b\f\x7f", "é", []byte(`[1,`), int64(-62135596800000000), false)
	f.Fuzz(func(t *testing.T, name, desc, status string, blueprint []byte, nanos int64, deleted bool) {
		if len(blueprint) == 0 {
			blueprint = nil // encoding/json fails on an empty, non-nil RawMessage; AppendJSON writes null
		}
		at := time.Unix(0, nanos).UTC()
		p := Project{ID: name + "-id", UserID: desc, Name: name, Description: desc, Status: status,
			WorkflowPresetID: status + name, Blueprint: blueprint, CreatedAt: at, UpdatedAt: at.Add(time.Microsecond), IsDeleted: deleted}
		want, wantErr := json.Marshal(&p)
		got, err := p.AppendJSON([]byte("prefix"))
		if (wantErr != nil) != (err != nil) {
			t.Fatalf("errors differ: encoding/json %v, AppendJSON %v", wantErr, err)
		}
		if err == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("AppendJSON:\n%s\nencoding/json:\n%s", got[len("prefix"):], want)
		}
	})
}
