package api

import (
	"context"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/store"
)

// sessionOperations declares the public half of the Auth family (typed: operations.go; served
// before authentication, documented without security): register, login and refresh, each behind
// the per-address rate limit of authentication (authRateLimit). accountOperations is the other.
func (s *Server) sessionOperations(public huma.API) {
	const tag = "Auth"
	limited := []fiber.Handler{s.authRateLimit}
	register(public, op{Method: "POST", Path: "/api/auth/register", Tag: tag, Summary: "Create an account", Status: 201,
		Errors: []int{409}, Before: limited}, s.register)
	register(public, op{Method: "POST", Path: "/api/auth/login", Tag: tag, Summary: "Log in", Before: limited,
		Desc: "A wrong password and an unknown email fail alike: 401 Invalid email or password."}, s.login)
	register(public, op{Method: "POST", Path: "/api/auth/refresh", Tag: tag, Summary: "Exchange a refresh token (rotating)",
		Before: limited, Desc: "The refresh token used is revoked; reusing a revoked one revokes its whole family."}, s.refresh)
}

// accountOperations declares the authenticated half of the Auth family: the caller's account.
func (s *Server) accountOperations(api huma.API) {
	register(api, op{Method: "GET", Path: "/api/auth/me", Tag: "Auth", Summary: "The caller"}, s.me)
}

type registerInput struct {
	Body struct {
		Email    string `json:"email" format:"email" maxLength:"254" doc:"case-insensitive, unique"`
		Password string `json:"password" minLength:"8" maxLength:"128"`
		Username string `json:"username" minLength:"1" maxLength:"64"`
	}
}

// Tokens are a session's credentials.
type Tokens struct {
	Token        string `json:"token" doc:"JWT access token, 7 days"`
	RefreshToken string `json:"refreshToken" doc:"opaque, single use, 30 days"`
}

// session is what register and login answer.
type session struct {
	Tokens
	User store.User `json:"user"`
}

// register serves POST /api/auth/register {email, password, username}: a free_user account,
// logged in. auth.Register checks the fields again (the CLI's accounts come through it too).
func (s *Server) register(ctx context.Context, in *registerInput) (*Data[session], error) {
	sess, err := s.Auth.Register(ctx, in.Body.Email, in.Body.Password, in.Body.Username)
	if err != nil {
		return nil, err
	}
	return answerData(session{Tokens{sess.Token, sess.RefreshToken}, *sess.User})
}

// loginInput is optional in all its parts: what is missing is a wrong password (401), never a
// 400 that would tell an address what the form lacks.
type loginInput struct {
	Body *struct {
		Email    string `json:"email,omitempty" doc:"required"`
		Password string `json:"password,omitempty" doc:"required"`
	}
}

// login serves POST /api/auth/login {email, password}.
func (s *Server) login(ctx context.Context, in *loginInput) (*Data[session], error) {
	var email, password string
	if in.Body != nil {
		email, password = in.Body.Email, in.Body.Password
	}
	sess, err := s.Auth.Login(ctx, email, password)
	if err != nil {
		return nil, err
	}
	return answerData(session{Tokens{sess.Token, sess.RefreshToken}, *sess.User})
}

// refreshInput: a missing token is an invalid one (401), as for login.
type refreshInput struct {
	Body *struct {
		RefreshToken string `json:"refreshToken,omitempty" doc:"required"`
	}
}

// refresh serves POST /api/auth/refresh {refreshToken}: a new pair for the token, which is spent.
func (s *Server) refresh(ctx context.Context, in *refreshInput) (*Data[Tokens], error) {
	var token string
	if in.Body != nil {
		token = in.Body.RefreshToken
	}
	sess, err := s.Auth.Refresh(ctx, token)
	if err != nil {
		return nil, err
	}
	return answerData(Tokens{sess.Token, sess.RefreshToken})
}

type meAnswer struct {
	User *store.User `json:"user"`
}

// me serves GET /api/auth/me: the caller's account.
func (s *Server) me(ctx context.Context, _ *struct{}) (*Data[meAnswer], error) {
	u, err := s.Auth.User(ctx, caller(ctx))
	if err != nil {
		return nil, err
	}
	return answerData(meAnswer{u})
}
