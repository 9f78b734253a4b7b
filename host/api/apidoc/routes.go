package apidoc

// Security names how an operation is authenticated.
type Security string

// The security of an operation.
const (
	Bearer   Security = "bearer"   // Authorization: Bearer <access token>
	Public   Security = "public"   // none
	Callback Security = "callback" // X-Signature: sha256=<hex HMAC of the body with CALLBACK_SECRET>
	Metrics  Security = "metrics"  // METRICS_TOKEN bearer, or loopback without one
	Socket   Security = "socket"   // bearer header or ?token= on the WebSocket upgrade
	File     Security = "file"     // bearer header, or a signed URL (?expires=&signature=)
)

// Param is a query, path or header parameter.
type Param struct {
	Name, In, Desc string
	Required       bool
	Schema         M
}

// Answer kinds: how the success body is shaped (shared/spec/DECISIONS.md, Envelope).
const (
	Data = "data" // {success, data: {...}} with data's keys repeated at the top level
	List = "list" // {success, data: [items], total, page, limit}
	Raw  = "raw"  // the schema as is
)

// Op is one operation of the API.
type Op struct {
	Method, Path string // Fiber syntax: /api/projects/:id
	Tag, Summary string
	Desc         string
	Sec          Security
	Query        []Param
	Body         M // JSON request body schema
	Form         M // multipart/form-data request body schema
	Status       int
	Kind         string // Data, List, Raw
	Resp         M      // the fields (Data: an object schema), the item (List) or the body (Raw)
	Errors       []int  // statuses beyond those of the security's defaults
	Idempotent   bool   // accepts Idempotency-Key (every authenticated POST does)
	OptionalBody bool
}

// Ops returns the operations of the API not declared as typed operations: none now.
func Ops() []Op { return nil }
