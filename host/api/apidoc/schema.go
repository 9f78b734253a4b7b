// Package apidoc holds what every operation of the host's OpenAPI document refers to and huma
// does not write from the operations' types (host/api/operations.go): the error envelope and its
// answers by HTTP status (the codes and statuses come from sdk/errcode's catalogue), the standard
// headers, the Idempotency-Key parameter, the security schemes, and which of them an operation
// gets (ErrorStatuses, TakesIdempotencyKey). host/api adds its operations to Build's document and
// serves the whole at GET /api/openapi.json; a test keeps the document and the routes the host
// registers in step. A route is declared as a typed operation: nothing of it is written here.
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
