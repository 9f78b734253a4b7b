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

// fileDesc, fileQuery and fileResp describe the two file routes.
const fileDesc = "Every file URL the API hands out (file_url, run outputs, events, WebSocket frames) is signed: " +
	"`?expires=<unix seconds>&signature=<HMAC>` lets a `<video>`, `<img>`, `<track>` or a shared link fetch it without a header " +
	"for FILE_URL_TTL (default 1 h); each read of a listing or result hands out fresh ones. An altered or expired URL answers 403, " +
	"a deleted file 404. With an Authorization header the owner's files are served whatever the query. The answer streams: " +
	"Range (206, 416), Accept-Ranges, ETag, Content-Disposition (`inline`, or `attachment` with `download=1`; the run's or " +
	"upload's name), a sandboxing Content-Security-Policy and `X-Content-Type-Options: nosniff`."

var (
	fileQuery = []Param{
		{Name: "expires", In: "query", Desc: "expiry of a signed URL (Unix seconds)", Schema: integer("")},
		{Name: "signature", In: "query", Desc: "HMAC of a signed URL", Schema: str("")},
		{Name: "download", In: "query", Desc: "1: Content-Disposition attachment", Schema: enum("1")},
	}
	fileResp = M{"type": "string", "contentMediaType": "*/*", "description": "the file's bytes with its own Content-Type (image/png, video/mp4, ...)"}
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

// inspirationForm is the upload form of an inspiration: the file as field file or media.
// materialForm is the form of a materials upload.
func materialForm() M {
	f := obj("file!", M{"type": "string", "contentMediaType": "application/octet-stream"}, "project_id", uuid, "tags", str("comma separated"))
	for k, v := range assetMetaForm() {
		f["properties"].(M)[k] = v
	}
	return f
}

// assetMetaForm is the creator's metadata an upload may carry as form fields.
func assetMetaForm() M {
	return M{
		"focus":       str(`focal point "x,y", each 0..1 from the left and the top (or focus_x and focus_y); every crop keeps it in view`),
		"focus_x":     num("focal point from the left, 0..1 (with focus_y)"),
		"focus_y":     num("focal point from the top, 0..1 (with focus_x)"),
		"description": str("what the picture or clip shows (at most 1000 characters); a template script says it where it matches the topic"),
	}
}

// focusSchema is a focal point in a JSON body.
var focusSchema = M{"oneOf": []any{
	M{"type": "object", "required": []any{"x", "y"}, "additionalProperties": false, "properties": M{
		"x": M{"type": "number", "minimum": 0, "maximum": 1}, "y": M{"type": "number", "minimum": 0, "maximum": 1}}},
	str(`"x,y"`), M{"type": "null", "description": "removes it"}}}

func inspirationForm() M {
	f := obj("file", M{"type": "string", "contentMediaType": "application/octet-stream"},
		"media", M{"type": "string", "contentMediaType": "application/octet-stream", "description": "alias of file"},
		"title", str(""), "project_id", uuid, "tags", str("comma separated"))
	for k, v := range assetMetaForm() {
		f["properties"].(M)[k] = v
	}
	f["anyOf"] = []any{M{"required": []any{"file"}}, M{"required": []any{"media"}}}
	return f
}

func q(name, desc string, s M) Param { return Param{Name: name, In: "query", Desc: desc, Schema: s} }

// Ops returns every operation of the API, in the order of the document's tags.
func Ops() []Op {
	docAnswer := obj("document!", ref("KnowledgeDocument"), "chunks_count!", integer(""), "duplicate", boolean("the source already held this file's hash"))
	listQ := func(extra ...Param) []Param { return append(append([]Param{}, paging...), extra...) }
	return []Op{
		// Knowledge
		{Method: "POST", Path: "/api/knowledge/upload", Tag: "Knowledge", Summary: "Ingest a file (txt, md, json, csv, html, pdf, docx)", Sec: Bearer, Status: 201, Kind: Data,
			Form: obj("file!", M{"type": "string", "contentMediaType": "application/octet-stream"}, "title", str(""),
				"source_name", M{"type": "string", "default": "default"}, "project_id", uuid, "visibility", enum("private", "project", "org"),
				"chunk_size", M{"type": "integer", "minimum": 200, "maximum": 4000, "default": 1000},
				"chunk_overlap", M{"type": "integer", "minimum": 0, "default": 180}),
			Resp: docAnswer, Errors: []int{403, 413}, Desc: "201 with the new document; a file whose hash the source already holds answers 200 with duplicate: true and the existing document. Only an admin may publish visibility org (403 for others)."},

		// Chat and content
		{Method: "POST", Path: "/api/ai/chat", Tag: "Content", Summary: "Chat through the chatflow tool (local fallback when it is down)", Sec: Bearer, Status: 200, Kind: Data,
			Body: obj("message!", str(""), "chatflowType", str("kb selects the knowledge chatflow"), "project_id", uuid,
				"session_id", str("continues a conversation: the chatflow tool's memory sees its earlier turns")),
			Resp: obj("response!", str(""), "citations!", arr(ref("Citation")), "session_id", str("the conversation the chatflow tool answered in"),
				"degraded", boolean(""), "degraded_reason", str("")), Errors: []int{403, 502}},
		{Method: "POST", Path: "/api/inspiration/collect", Tag: "Content", Summary: "Collect an inspiration", Sec: Bearer, Status: 201, Kind: Data,
			Body: obj("type!", enum("link", "text"), "content!", str("the link for type link"), "project_id", uuid, "title", str(""), "tags", arr(str(""))),
			Resp: obj("id!", uuid, "inspiration!", ref("Corpus"), "preview", anyObj("title, description, cover, platform")), Errors: []int{403}},
		{Method: "GET", Path: "/api/inspiration/unified-feed", Tag: "Content", Summary: "Inspirations and assets in one feed", Sec: Bearer, Status: 200, Kind: Data,
			Query: listQ(q("content_type", "all or a tab value", str("")), q("source", "", enum("user", "studio", "all")), q("project_id", "", uuid)),
			Resp: obj("items!", arr(anyObj("a corpus record or an asset")), "hasMore!", boolean(""),
				"stats!", obj("total", integer(""), "collection", integer(""), "smart", integer(""), "trend", integer(""), "asset", integer(""))), Errors: []int{403}},
		{Method: "POST", Path: "/api/inspiration/:id/convert-to-task", Tag: "Content", Summary: "Create a capture task from an inspiration", Sec: Bearer, Status: 201, Kind: Data,
			Resp: obj("task_id!", uuid, "task", ref("CaptureTask")), Errors: []int{404}, OptionalBody: true},
		{Method: "GET", Path: "/api/capture-tasks", Tag: "Content", Summary: "The caller's capture tasks, newest first", Sec: Bearer, Status: 200, Kind: List,
			Query: listQ(q("status", "", enum("pending", "completed", "cancelled")), q("project_id", "", uuid)), Resp: ref("CaptureTask")},
		{Method: "GET", Path: "/api/capture-tasks/:id", Tag: "Content", Summary: "One of the caller's capture tasks", Sec: Bearer, Status: 200, Kind: Data,
			Resp: obj("task!", ref("CaptureTask")), Errors: []int{404}},
		{Method: "POST", Path: "/api/capture-tasks/:id/complete", Tag: "Content", Summary: "Mark a pending capture task done (emits task.completed)", Sec: Bearer, Status: 200, Kind: Data,
			Resp: obj("task!", ref("CaptureTask")), Errors: []int{404, 409}, OptionalBody: true},
		{Method: "POST", Path: "/api/capture-tasks/:id/cancel", Tag: "Content", Summary: "Cancel a pending capture task", Sec: Bearer, Status: 200, Kind: Data,
			Resp: obj("task!", ref("CaptureTask")), Errors: []int{404, 409}, OptionalBody: true},
		{Method: "POST", Path: "/api/inspiration/upload", Tag: "Content", Summary: "Upload inspiration media", Sec: Bearer, Status: 201, Kind: Data,
			Form: inspirationForm(),
			Resp: obj("id!", uuid, "inspiration!", ref("Corpus"), "asset!", ref("Asset")), Errors: []int{403, 413}},
		{Method: "POST", Path: "/api/inspiration/parse-link", Tag: "Content", Summary: "Parse a douyin, xiaohongshu or weibo link", Sec: Bearer, Status: 201, Kind: Data,
			Body: obj("url!", strFmt("uri")), Resp: obj("corpus!", ref("Corpus"), "assets!", arr(ref("Asset"))), Errors: []int{502}},
		{Method: "GET", Path: "/api/corpus", Tag: "Content", Summary: "The caller's corpus", Sec: Bearer, Status: 200, Kind: List,
			Query: listQ(q("tag", "", str(""))), Resp: ref("Corpus")},
		{Method: "GET", Path: "/api/corpus/:id", Tag: "Content", Summary: "A corpus record with related assets", Sec: Bearer, Status: 200, Kind: Data,
			Resp: obj("corpus!", ref("Corpus"), "relatedAssets!", arr(ref("Asset"))), Errors: []int{404}},
		{Method: "PUT", Path: "/api/corpus/:id", Tag: "Content", Summary: "Update a corpus record", Sec: Bearer, Status: 200, Kind: Data,
			Body: corpusPatch(), Resp: obj("corpus!", ref("Corpus")), Errors: []int{404}},
		{Method: "PATCH", Path: "/api/corpus/:id", Tag: "Content", Summary: "Update some fields of a corpus record", Sec: Bearer, Status: 200, Kind: Data,
			Body: corpusPatch(), Resp: obj("corpus!", ref("Corpus")), Errors: []int{404}},
		{Method: "DELETE", Path: "/api/corpus/:id", Tag: "Content", Summary: "Delete a corpus record (soft)", Sec: Bearer, Status: 200, Kind: Data,
			Resp: obj("deleted!", boolean(""), "id", uuid), Errors: []int{404}},
		{Method: "POST", Path: "/api/materials/upload", Tag: "Content", Summary: "Upload a material (form field file)", Sec: Bearer, Status: 201, Kind: Data,
			Form: materialForm(), Resp: obj("asset!", ref("Asset")), Errors: []int{403, 413}},
		{Method: "GET", Path: "/api/materials", Tag: "Content", Summary: "The caller's materials", Sec: Bearer, Status: 200, Kind: List,
			Query: listQ(q("type", "", enum("video", "image", "audio", "captions")), q("tag", "", str(""))), Resp: ref("Asset")},
		{Method: "GET", Path: "/api/materials/:id", Tag: "Content", Summary: "One asset of the caller's, with its cover", Sec: Bearer, Status: 200, Kind: Data,
			Resp: obj("asset!", ref("Asset")), Errors: []int{404}},
		{Method: "PATCH", Path: "/api/materials/:id", Tag: "Content", Summary: "Set the creator's metadata of an asset of the caller's: its focal point and description (the rest of its metadata is kept)", Sec: Bearer, Status: 200, Kind: Data,
			Body: obj("metadata!", M{"type": "object", "additionalProperties": false, "properties": M{
				"focus":       focusSchema,
				"description": nullable(M{"type": "string", "maxLength": 1000, "description": `"" or null removes it`})}}),
			Resp: obj("asset!", ref("Asset")), Errors: []int{404}},
		{Method: "POST", Path: "/api/materials/batch-delete", Tag: "Content", Summary: "Delete materials: their files' bytes, then their rows; the run results that named them name them no more", Sec: Bearer, Status: 200, Kind: Data,
			Body: obj("ids!", M{"type": "array", "items": uuid, "minItems": 1, "maxItems": 100}), Resp: obj("deletedCount!", integer(""))},
		{Method: "GET", Path: "/api/materials/:id/file", Tag: "Content", Summary: "An asset's file by the asset's id (uploaded or made by a run); Range requests give 206", Sec: File, Status: 200, Kind: Raw,
			Desc: fileDesc, Query: fileQuery, Resp: fileResp, Errors: []int{404}},
		{Method: "GET", Path: "/api/assets/files/*", Tag: "Content", Summary: "An asset's file by its storage key (the file_url of files runs make); Range requests give 206", Sec: File, Status: 200, Kind: Raw,
			Desc: fileDesc, Query: fileQuery, Resp: fileResp, Errors: []int{404}},
	}
}

func corpusPatch() M {
	return obj("title", str(""), "content", str(""), "tags", arr(str("")), "status", enum("unread", "read", "archived"), "is_featured", boolean(""))
}
