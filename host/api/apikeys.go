package api

import (
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// apiKeyRoutes: service credentials, for admins only (`reelforge token ...` is the same from the
// command line).
func (s *Server) apiKeyRoutes(r fiber.Router) {
	r.Post("/admin/api-keys", s.requireAdmin, issuesCredential, s.createAPIKey)
	r.Get("/admin/api-keys", s.requireAdmin, s.listAPIKeys)
	r.Delete("/admin/api-keys/:id", s.requireAdmin, s.revokeAPIKey)
}

func (s *Server) requireAdmin(c *fiber.Ctx) error {
	if !principal(c).IsAdmin() {
		return errcode.New(errcode.Authorization, "Only an admin may manage API keys")
	}
	return c.Next()
}

// createAPIKey serves POST /api/admin/api-keys {name, scope}: the key is in this answer only.
// An admin-scope key acts as the admin who created it.
func (s *Server) createAPIKey(c *fiber.Ctx) error {
	var in struct {
		Name  string `json:"name"`
		Scope string `json:"scope"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	p := principal(c)
	key, k, err := auth.CreateKey(s.ctx(c), s.Store, auth.CreateKeyParams{Name: in.Name, Scope: in.Scope,
		UserID: p.UserID, CreatedBy: p.UserID})
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"key": key, "api_key": k})
}

// listAPIKeys serves GET /api/admin/api-keys: every key (never the key itself), with its last use.
func (s *Server) listAPIKeys(c *fiber.Ctx) error {
	keys, err := s.Store.ListAPIKeys(s.ctx(c))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"api_keys": keys, "total": len(keys)})
}

// revokeAPIKey serves DELETE /api/admin/api-keys/:id (an id or a live key's name).
func (s *Server) revokeAPIKey(c *fiber.Ctx) error {
	k, err := s.Store.RevokeAPIKey(s.ctx(c), c.Params("id"), s.Store.Now())
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"api_key": k})
}
