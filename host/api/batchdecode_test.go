package api

import (
	"encoding/json"
	"reflect"
	"testing"

	gojson "github.com/goccy/go-json"
)

// TestBatchTextOnePass: batch/text's one-pass decode (goccy/go-json) reads a body as
// encoding/json does, or fails and leaves it to the item-by-item decode; it never reads a body
// to other values, nor accepts one encoding/json refuses.
func TestBatchTextOnePass(t *testing.T) {
	bodies := []string{
		`{"items":[{"text":"a"},{"text":"b","title":"t","source_name":"s","project_id":"p","visibility":"private"}]}`,
		` {"items" : [ {"text" : "esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00 \u2028"} ] } `,
		`{"items":[{"text":"lone surrogate \ud800 x \udc00"}]}`,
		`{"items":[{"TEXT":"case","Title":"x"}]}`,
		`{"items":[{"text":"first","text":"second"}]}`,
		`{"items":[{"text":"m","metadata":{ "a" : [1, 2.5e3, null, true] }}]}`,
		`{"items":[{"text":"m","metadata":null}]}`,
		`{"items":[{"text":"m","metadata":"s"}]}`,
		`{"items":[{"text":"n","chunk_size":800,"chunk_overlap":0}]}`,
		`{"items":[{"text":"n","chunk_size":8e2}]}`,
		`{"items":[{"text":"n","chunk_size":800.0}]}`,
		`{"items":[{"text":"n","chunk_size":-1}]}`,
		`{"items":[{"text":"n","chunk_size":99999999999999999999}]}`,
		`{"items":[{"text":"n","chunk_size":null}]}`,
		`{"items":[{"text":"n","internal":true}]}`,
		`{"items":[{"text":"n","internal":"yes"}]}`,
		`{"items":[{"text":5}]}`,
		`{"items":[null,{"text":"x"}]}`,
		`{"items":["x"]}`,
		`{"items":[[]]}`,
		`{"items":null}`,
		`{"items":{}}`,
		`{"other":1,"items":[{"text":"x","unknown":{"deep":[1]}}]}`,
		`{"items":[{"text":"x"}]} trailing`,
		`{"items":[{"text":"x"},]}`,
		`{"items":[{"text":"x"}]`,
		`{"items":[{"text":"\x"}]}`,
		`{"items":[{"text":"x"}]}{}`,
		`[]`,
		``,
	}
	type body struct {
		Items []textInput `json:"items"`
	}
	for _, b := range bodies {
		var fast, std body
		errFast := gojson.Unmarshal([]byte(b), &fast)
		errStd := json.Unmarshal([]byte(b), &std)
		if errFast != nil {
			continue // the item-by-item decode reads it
		}
		if errStd != nil {
			t.Errorf("%s: one pass accepted what encoding/json refuses (%v)", b, errStd)
		} else if !reflect.DeepEqual(fast, std) {
			t.Errorf("%s: one pass read %+v, encoding/json %+v", b, fast, std)
		}
	}
}
