package api

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

//go:generate go run ./apidoc/gen openapi.json

// openAPI is the OpenAPI 3.1 document of the API, written by host/api/apidoc (go generate).
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the embedded OpenAPI document.
func OpenAPI() []byte { return openAPI }

// serveOpenAPI answers GET /api/openapi.json (public).
func (s *Server) serveOpenAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.Send(openAPI)
}
