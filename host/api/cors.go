package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
)

// corsMaxAge is how long a browser may cache a preflight's answer (seconds).
const corsMaxAge = 600

// cors lets the browser origins of CORS_ALLOW_ORIGINS call the API with credentials (the
// Authorization header). Preflights (OPTIONS with Access-Control-Request-Method) are answered
// here, before authentication; an origin not listed gets no Access-Control-Allow-Origin.
func (s *Server) cors() fiber.Handler {
	return cors.New(cors.Config{
		AllowOrigins: strings.Join(s.Config.CORSAllowOrigins, ","),
		AllowMethods: "GET,POST,PUT,PATCH,DELETE,HEAD",
		// Range, If-Range, If-None-Match: a player's (or a fetch's) byte-range requests of a file.
		AllowHeaders: "Authorization,Content-Type,Idempotency-Key,X-Request-Id,Range,If-Range,If-None-Match",
		// Content-Range, Content-Length, Accept-Ranges, Content-Disposition, ETag: what a player
		// library reads of a file's answer.
		ExposeHeaders: "X-Request-Id,X-API-Version,Retry-After,Idempotent-Replayed,Content-Disposition,Content-Range," +
			"Content-Length,Accept-Ranges,ETag",
		AllowCredentials: true,
		MaxAge:           corsMaxAge,
	})
}
