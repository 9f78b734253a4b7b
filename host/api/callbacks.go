package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/sdk/engine"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// callbackRoutes registers the inbound callbacks of external executors, one route a callback kind
// (engine.CallbackPath). They are public (no bearer token): each request is authenticated by its
// X-Signature instead (DECISIONS.md, Inbound callbacks).
func (s *Server) callbackRoutes(r fiber.Router) {
	for _, kind := range engine.CallbackKinds {
		r.Post(engine.CallbackPath(kind), s.callback(kind))
	}
}

// VerifySignature reports whether header is `sha256=<hex HMAC-SHA256 of body>` under secret.
func VerifySignature(secret string, body []byte, header string) bool {
	if secret == "" {
		return false
	}
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

func (s *Server) callback(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if len(c.Body()) > s.Config.BodyLimit {
			return tooLarge()
		}
		if !VerifySignature(s.Config.CallbackSecret, c.Body(), c.Get("X-Signature")) {
			return errcode.New(errcode.CallbackVerification, "Callback signature verification failed")
		}
		rs, err := s.runService()
		if err != nil {
			return err
		}
		res, err := rs.Callback(s.ctx(c), kind, c.Body())
		if err != nil {
			return err
		}
		data := fiber.Map{"job_id": res.JobID, "run_id": res.RunID, "status": res.Status}
		if res.Duplicate {
			data["duplicate"] = true
		}
		return ok(c, fiber.StatusOK, data)
	}
}
