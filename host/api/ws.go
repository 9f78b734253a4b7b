package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/fasthttp/websocket"
	fws "github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/access"
	"github.com/reelforge/reelforge/host/api/apidoc"
	"github.com/reelforge/reelforge/host/auth"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// WebSocket timing: the server pings every wsPingEvery; a connection that sends nothing (not even
// a pong) for wsReadWait is closed; one write may take wsWriteWait.
const (
	wsPingEvery   = 30 * time.Second
	wsReadWait    = 75 * time.Second
	wsWriteWait   = 10 * time.Second
	wsMaxMessage  = 64 << 10
	localWSCaller = "ws_principal"
)

// wsOperation declares GET /ws (raw: an upgrade), authenticated before the upgrade (no or bad
// token: 401 in the envelope).
func (s *Server) wsOperation(root huma.API) {
	registerRaw(root, op{Method: "GET", Path: "/ws", Tag: "Events", Summary: "WebSocket: task:status, task:progress, asset:sync; subscribe:project",
		Status: fiber.StatusSwitchingProtocols, Sec: apidoc.Socket, Errors: []int{401}, Before: []fiber.Handler{s.wsAuthenticate},
		Params: []*huma.Param{{Name: "token", In: "query", Description: "access token, when no Authorization header can be sent",
			Schema: &huma.Schema{Type: huma.TypeString}}},
		Desc: "Frames are JSON {type, data}. Send {type: \"subscribe:project\", data: {projectId}}; a project not the caller's answers a frame of type error with the 403 message."},
		map[string]*huma.Response{"101": {Description: "Switching Protocols: the WebSocket is open"}},
		fws.New(s.wsServe, fws.Config{HandshakeTimeout: 10 * time.Second}))
}

// wsAuthenticate takes the token from Authorization: Bearer or ?token=.
func (s *Server) wsAuthenticate(c *fiber.Ctx) error {
	if s.Hub == nil {
		return errcode.New(errcode.ResourceExhausted, "WebSocket notifications are not available")
	}
	tok, _ := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if tok = strings.TrimSpace(tok); tok == "" {
		tok = strings.TrimSpace(c.Query("token"))
	}
	if tok == "" {
		return errcode.New(errcode.Authentication, "Missing token: send Authorization: Bearer or ?token=")
	}
	p, err := s.Auth.VerifyAccount(c.UserContext(), tok)
	if err != nil {
		return err
	}
	if !fws.IsWebSocketUpgrade(c) {
		return errcode.New(errcode.Validation, "WebSocket upgrade required").WithStatus(fiber.StatusUpgradeRequired)
	}
	c.Locals(localWSCaller, p)
	return c.Next()
}

// wsAdmit counts a new connection of user, or reports false when the user holds
// Config.WSConnectionsPerUser already (each costs a goroutine pair, a queue and the hub's fan-out).
func (s *Server) wsAdmit(user string) bool {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	if s.wsConns == nil {
		s.wsConns = map[string]int{}
	}
	if limit := s.Config.WSConnectionsPerUser; limit > 0 && s.wsConns[user] >= limit {
		return false
	}
	s.wsConns[user]++
	return true
}

// wsLeave uncounts a connection wsAdmit admitted.
func (s *Server) wsLeave(user string) {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	if s.wsConns[user]--; s.wsConns[user] <= 0 {
		delete(s.wsConns, user)
	}
}

// wsIn is a client message.
type wsIn struct {
	Type string `json:"type"`
	Data struct {
		ProjectID string `json:"projectId"`
	} `json:"data"`
}

func wsError(code errcode.Code, msg string) fiber.Map {
	return fiber.Map{"type": "error", "data": fiber.Map{"code": code, "message": msg}}
}

// wsServe runs one connection: this goroutine reads client messages; a writer goroutine drains
// the hub's queue and pings. Either side failing closes the connection.
func (s *Server) wsServe(conn *fws.Conn) {
	p, _ := conn.Locals(localWSCaller).(*auth.Principal)
	if p == nil {
		return
	}
	if !s.wsAdmit(p.UserID) {
		// Refused after the upgrade, so that the client reads why in the close frame (a browser
		// sees no body of a refused handshake).
		limit := s.Config.WSConnectionsPerUser
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation,
			fmt.Sprintf("too many connections: at most %d WebSocket connections per user", limit)), time.Now().Add(wsWriteWait))
		_ = conn.Close() // the refused connection is closed either way; nothing to tell anyone
		return
	}
	defer s.wsLeave(p.UserID)
	cl := s.Hub.Register(p.UserID)
	defer s.Hub.Unregister(cl)
	writerDone := make(chan struct{})
	go s.wsWrite(conn, cl, writerDone)
	defer func() { <-writerDone }()

	conn.SetReadLimit(wsMaxMessage)
	alive := func() { _ = conn.SetReadDeadline(time.Now().Add(wsReadWait)) }
	alive()
	conn.SetPongHandler(func(string) error { alive(); return nil })
	conn.SetPingHandler(func(data string) error { // echo the payload, as the default handler does
		alive()
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(wsWriteWait))
		if err == websocket.ErrCloseSent {
			return nil
		}
		return err
	})
	for {
		kind, msg, err := conn.ReadMessage()
		if err != nil {
			s.Hub.Unregister(cl) // stops the writer
			return
		}
		alive()
		if kind != websocket.TextMessage {
			continue
		}
		s.wsHandle(cl, p, msg)
	}
}

func (s *Server) wsHandle(cl *events.Client, p *auth.Principal, msg []byte) {
	var in wsIn
	if err := json.Unmarshal(msg, &in); err != nil {
		s.Hub.SendTo(cl, wsError(errcode.Validation, "Malformed JSON message"))
		return
	}
	switch in.Type {
	case "subscribe:project", "unsubscribe:project":
		if in.Data.ProjectID == "" {
			s.Hub.SendTo(cl, wsError(errcode.Validation, "data.projectId is required"))
			return
		}
		if in.Type == "unsubscribe:project" {
			s.Hub.Unsubscribe(cl, in.Data.ProjectID)
			s.Hub.SendTo(cl, fiber.Map{"type": "unsubscribed", "data": fiber.Map{"projectId": in.Data.ProjectID}})
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := access.Project(ctx, s.Store, p, in.Data.ProjectID, access.InBody); err != nil {
			e := toCoded(err)
			s.Hub.SendTo(cl, wsError(e.Code, e.Message()))
			return
		}
		s.Hub.Subscribe(cl, in.Data.ProjectID)
		s.Hub.SendTo(cl, fiber.Map{"type": "subscribed", "data": fiber.Map{"projectId": in.Data.ProjectID}})
	case "ping":
		s.Hub.SendTo(cl, fiber.Map{"type": "pong", "data": fiber.Map{"time": time.Now().UTC().Format(time.RFC3339Nano)}})
	default:
		s.Hub.SendTo(cl, wsError(errcode.Validation, "Unknown message type"))
	}
}

// wsWrite sends queued frames and pings until the client is dropped or a write fails, then
// closes the connection (which ends the reader).
func (s *Server) wsWrite(conn *fws.Conn, cl *events.Client, done chan struct{}) {
	defer close(done)
	ping := time.NewTicker(wsPingEvery)
	defer ping.Stop()
	defer conn.Close()
	for {
		select {
		case b := <-cl.Send():
			_ = conn.SetWriteDeadline(time.Now().Add(wsWriteWait)) // a dead connection fails the write below, which unregisters it
			if err := conn.WriteMessage(websocket.TextMessage, b); err != nil {
				s.Hub.Unregister(cl)
				return
			}
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(wsWriteWait)); err != nil {
				s.Hub.Unregister(cl)
				return
			}
		case <-cl.Done():
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
				time.Now().Add(time.Second))
			return
		}
	}
}
