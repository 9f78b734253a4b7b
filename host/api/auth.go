package api

import (
	"github.com/gofiber/fiber/v2"
)

type credentials struct {
	Email        string `json:"email"`
	Password     string `json:"password"`
	Username     string `json:"username"`
	RefreshToken string `json:"refreshToken"`
}

func (s *Server) register(c *fiber.Ctx) error {
	var in credentials
	if err := decode(c, &in); err != nil {
		return err
	}
	sess, err := s.Auth.Register(s.ctx(c), in.Email, in.Password, in.Username)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"token": sess.Token, "refreshToken": sess.RefreshToken, "user": sess.User})
}

func (s *Server) login(c *fiber.Ctx) error {
	var in credentials
	if err := decode(c, &in); err != nil {
		return err
	}
	sess, err := s.Auth.Login(s.ctx(c), in.Email, in.Password)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"token": sess.Token, "refreshToken": sess.RefreshToken, "user": sess.User})
}

func (s *Server) refresh(c *fiber.Ctx) error {
	var in credentials
	if err := decode(c, &in); err != nil {
		return err
	}
	sess, err := s.Auth.Refresh(s.ctx(c), in.RefreshToken)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"token": sess.Token, "refreshToken": sess.RefreshToken})
}

func (s *Server) me(c *fiber.Ctx) error {
	u, err := s.Auth.User(s.ctx(c), principal(c))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"user": u})
}
