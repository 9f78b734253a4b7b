// Package apidoc documents, in a table (routes.go), the operations of the host's HTTP API that are
// not declared as typed operations yet (host/api/operations.go, where a route's types are its
// documentation): each with its request, its success answer in the envelope of
// shared/spec/DECISIONS.md, its error answers (the codes and statuses come from sdk/errcode's
// catalogue) and its security. It also holds what every operation of the document refers to: the
// error responses, the standard headers and the security schemes. host/api adds the typed
// operations to Build's document and serves the whole at GET /api/openapi.json; a test keeps the
// document and the routes the host registers in step.
//
// A new route is declared as a typed operation, not added here; this table shrinks as the
// families move (docs/api.md).
package apidoc

// M is a JSON object of the document.
type M = map[string]any

func str(desc string) M { return M{"type": "string", "description": desc} }
func strFmt(format string) M {
	return M{"type": "string", "format": format}
}
func integer(desc string) M { return M{"type": "integer", "description": desc} }
func arr(item M) M          { return M{"type": "array", "items": item} }
func ref(name string) M     { return M{"$ref": "#/components/schemas/" + name} }

// obj builds an object schema from name, schema pairs; a name ending in "!" is required.
func obj(pairs ...any) M {
	props := M{}
	var req []any
	for i := 0; i+1 < len(pairs); i += 2 {
		name := pairs[i].(string)
		if n := len(name); n > 0 && name[n-1] == '!' {
			name = name[:n-1]
			req = append(req, name)
		}
		props[name] = pairs[i+1]
	}
	o := M{"type": "object", "properties": props}
	if len(req) > 0 {
		o["required"] = req
	}
	return o
}

var uuid = strFmt("uuid")

// schemas are the named records of the API.
func schemas() M {
	return M{
		"FieldError": obj("field!", str(""), "problem!", str("")),
		"ErrorEnvelope": obj("success!", M{"const": false}, "error!", obj(
			"code!", M{"$ref": "#/components/schemas/ErrorCode"}, "errno!", integer("the code's number"),
			"message!", str("public message: never a stack trace, SQL or file path"),
			"details", M{"description": "optional; field errors are [{field, problem}], else an object", "anyOf": []any{arr(ref("FieldError")), M{"type": "object"}}})),
	}
}
