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

func q(name, desc string, s M) Param { return Param{Name: name, In: "query", Desc: desc, Schema: s} }

// Ops returns every operation of the API, in the order of the document's tags.
func Ops() []Op {
	docAnswer := obj("document!", ref("KnowledgeDocument"), "chunks_count!", integer(""), "duplicate", boolean("the source already held this file's hash"))
	return []Op{
		// Knowledge
		{Method: "POST", Path: "/api/knowledge/upload", Tag: "Knowledge", Summary: "Ingest a file (txt, md, json, csv, html, pdf, docx)", Sec: Bearer, Status: 201, Kind: Data,
			Form: obj("file!", M{"type": "string", "contentMediaType": "application/octet-stream"}, "title", str(""),
				"source_name", M{"type": "string", "default": "default"}, "project_id", uuid, "visibility", enum("private", "project", "org"),
				"chunk_size", M{"type": "integer", "minimum": 200, "maximum": 4000, "default": 1000},
				"chunk_overlap", M{"type": "integer", "minimum": 0, "default": 180}),
			Resp: docAnswer, Errors: []int{403, 413}, Desc: "201 with the new document; a file whose hash the source already holds answers 200 with duplicate: true and the existing document. Only an admin may publish visibility org (403 for others)."},
	}
}
