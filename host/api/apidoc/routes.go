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
