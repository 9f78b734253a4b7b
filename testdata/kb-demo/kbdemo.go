// Package kbdemo carries the demo knowledge base's eval set (eval.json) into the binary, for
// GET /api/knowledge/eval-set and POST /api/knowledge/eval/run-search.
package kbdemo

import _ "embed" // eval.json

// EvalJSON is eval.json: {scenarios: [{id, name, description}], items: [{id, scenario, question,
// expected_answer, doc}]}.
//
//go:embed eval.json
var EvalJSON []byte
