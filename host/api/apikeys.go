package api

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// apiKeyOperations: service credentials, for admins only (`reelforge token ...` is the same from
// the command line). The admin check runs before the input is read: a caller who is not an admin
// learns nothing of the body's rules.
func (s *Server) apiKeyOperations(api huma.API) {
	const tag = "Admin"
	register(api, op{Method: "POST", Path: "/api/admin/api-keys", Tag: tag, Summary: "Issue an API key (shown once)", Status: 201,
		Errors: []int{403, 409}, Before: []fiber.Handler{s.requireAdmin, issuesCredential},
		Desc: "Admins only. An automation key reaches the scheduler API, the orchestrator and the notification routes; " +
			"runs it starts belong to the project's owner (trigger scheduler, triggered_by the key's name). An admin key acts " +
			"as the admin who issued it. With an Idempotency-Key the answer is not kept: a repeat answers 409 (the key was " +
			"already issued) and issues none."}, s.createAPIKey)
	register(api, op{Method: "GET", Path: "/api/admin/api-keys", Tag: tag, Summary: "Every API key with its last use",
		Errors: []int{403}, Before: []fiber.Handler{s.requireAdmin}}, s.listAPIKeys)
	register(api, op{Method: "DELETE", Path: "/api/admin/api-keys/{id}", Tag: tag, Summary: "Revoke an API key (by id or name)",
		Errors: []int{403, 404}, Before: []fiber.Handler{s.requireAdmin}}, s.revokeAPIKey)
}

func (s *Server) requireAdmin(c *fiber.Ctx) error {
	if !principal(c).IsAdmin() {
		return errcode.New(errcode.Authorization, "Only an admin may manage API keys")
	}
	return c.Next()
}

type createAPIKeyInput struct {
	Body struct {
		Name  string `json:"name" pattern:"^[A-Za-z0-9._-]{1,64}$" patternDescription:"1 to 64 letters, digits, '-', '_' or '.'" doc:"triggered_by of the runs the key starts"`
		Scope string `json:"scope" enum:"automation,admin"`
	}
}

type createdAPIKey struct {
	Key    string        `json:"key" doc:"rfk_...: send as Authorization: Bearer; shown only in this answer"`
	APIKey *store.APIKey `json:"api_key"`
}

// createAPIKey serves POST /api/admin/api-keys {name, scope}: the key is in this answer only.
// An admin-scope key acts as the admin who created it.
func (s *Server) createAPIKey(ctx context.Context, in *createAPIKeyInput) (*Data[createdAPIKey], error) {
	p := caller(ctx)
	key, k, err := auth.CreateKey(ctx, s.Store, auth.CreateKeyParams{Name: in.Body.Name, Scope: in.Body.Scope,
		UserID: p.UserID, CreatedBy: p.UserID})
	if err != nil {
		return nil, err
	}
	return answerData(createdAPIKey{key, k})
}

type apiKeysAnswer struct {
	APIKeys []store.APIKey `json:"api_keys"`
	Total   int            `json:"total"`
}

// listAPIKeys serves GET /api/admin/api-keys: every key (never the key itself), with its last use.
func (s *Server) listAPIKeys(ctx context.Context, _ *struct{}) (*Data[apiKeysAnswer], error) {
	keys, err := s.Store.ListAPIKeys(ctx)
	if err != nil {
		return nil, err
	}
	return answerData(apiKeysAnswer{keys, len(keys)})
}

type apiKeyPath struct {
	ID string `path:"id" doc:"an id or a live key's name"`
}

type apiKeyAnswer struct {
	APIKey *store.APIKey `json:"api_key"`
}

// revokeAPIKey serves DELETE /api/admin/api-keys/{id} (an id or a live key's name).
func (s *Server) revokeAPIKey(ctx context.Context, in *apiKeyPath) (*Data[apiKeyAnswer], error) {
	k, err := s.Store.RevokeAPIKey(ctx, in.ID, s.Store.Now())
	if err != nil {
		return nil, err
	}
	return answerData(apiKeyAnswer{k})
}
