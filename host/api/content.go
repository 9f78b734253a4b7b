package api

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

func (s *Server) contentRoutes(r fiber.Router) {
	if s.Content == nil {
		return
	}
	r.Post("/inspiration/collect", s.collectInspiration)
	r.Get("/inspiration/unified-feed", s.unifiedFeed)
	r.Post("/inspiration/upload", s.uploadInspiration)
	r.Post("/inspiration/parse-link", s.parseLink)
	r.Post("/inspiration/:id/convert-to-task", s.convertToTask)
	r.Get("/capture-tasks", s.listCaptureTasks)
	r.Get("/capture-tasks/:id", s.getCaptureTask)
	r.Post("/capture-tasks/:id/complete", s.finishCaptureTask(store.CaptureCompleted))
	r.Post("/capture-tasks/:id/cancel", s.finishCaptureTask(store.CaptureCancelled))

	r.Get("/corpus", s.listCorpus)
	r.Get("/corpus/:id", s.getCorpus)
	r.Patch("/corpus/:id", s.updateCorpus)
	r.Put("/corpus/:id", s.updateCorpus)
	r.Delete("/corpus/:id", s.deleteCorpus)

	r.Post("/materials/upload", s.uploadMaterial)
	r.Get("/materials", s.listMaterials)
	r.Post("/materials/batch-delete", s.batchDeleteMaterials)
	r.Get("/materials/:id", s.getMaterial)
	r.Patch("/materials/:id", s.updateMaterial)

	s.chatRoutes(r)
}

// projectRef reads project_id or projectId.
type projectRef struct {
	ProjectID  string `json:"project_id"`
	ProjectID2 string `json:"projectId"`
}

func (p projectRef) id() string {
	if p.ProjectID != "" {
		return p.ProjectID
	}
	return p.ProjectID2
}

// checkedProject checks a project named in a body, query or form (403 when not the caller's) and
// returns its id ("" when none was named).
func (s *Server) checkedProject(c *fiber.Ctx, id string) (string, error) {
	p, err := s.bodyProject(c, strings.TrimSpace(id))
	if err != nil || p == nil {
		return "", err
	}
	return p.ID, nil
}

// queryProject is checkedProject of the query's project_id (or projectId).
func (s *Server) queryProject(c *fiber.Ctx) (string, error) {
	return s.checkedProject(c, firstSet(c.Query("project_id"), c.Query("projectId")))
}

// queryTag is a listing's tag filter, the query's tag (at most 50 characters).
func queryTag(c *fiber.Ctx) (string, error) {
	tag := strings.TrimSpace(c.Query("tag"))
	return tag, fieldLen("tag", tag, false, 50)
}

type collectInput struct {
	projectRef
	Type    string   `json:"type"`
	Content string   `json:"content"`
	URL     string   `json:"url"`
	Title   string   `json:"title"`
	Tags    []string `json:"tags"`
}

func (s *Server) collectInspiration(c *fiber.Ctx) error {
	var in collectInput
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Content == "" && in.URL != "" {
		in.Content, in.Type = in.URL, firstSet(in.Type, "link")
	}
	if strings.TrimSpace(in.Content) == "" {
		return errcode.Invalid("content", "is required")
	}
	pid, err := s.checkedProject(c, in.id())
	if err != nil {
		return err
	}
	rec, pv, err := s.Content.Collect(s.ctx(c), content.CollectInput{UserID: principal(c).UserID, ProjectID: pid,
		Type: in.Type, Content: in.Content, Title: in.Title, Tags: in.Tags})
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"id": rec.ID, "inspiration": rec, "preview": pv})
}

func firstSet(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

func (s *Server) unifiedFeed(c *fiber.Ctx) error {
	page, limit, offset, err := paging(c)
	if err != nil {
		return err
	}
	tab := strings.ToLower(firstSet(c.Query("content_type"), "all"))
	if !contains(content.FeedTabs, tab) {
		return errcode.Invalid("content_type", "must be one of "+strings.Join(content.FeedTabs, ", "))
	}
	source := strings.ToLower(firstSet(c.Query("source"), "all"))
	if source != "user" && source != "studio" && source != "all" {
		return errcode.Invalid("source", "must be user, studio or all")
	}
	pid, err := s.queryProject(c)
	if err != nil {
		return err
	}
	items, more, stats, err := s.Content.Feed(s.ctx(c), content.FeedParams{UserID: principal(c).UserID, ProjectID: pid,
		ContentType: tab, Source: source, Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"success": true, "data": fiber.Map{"items": items, "hasMore": more, "stats": stats,
		"page": page, "limit": limit}})
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func (s *Server) convertToTask(c *fiber.Ctx) error {
	task, err := s.Content.ConvertToTask(s.ctx(c), principal(c).UserID, c.Params("id"))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"task_id": task.ID, "task": task})
}

// listCaptureTasks serves GET /api/capture-tasks?status=&project_id=&page=&limit=: the caller's.
func (s *Server) listCaptureTasks(c *fiber.Ctx) error {
	page, limit, offset, err := paging(c)
	if err != nil {
		return err
	}
	items, total, err := s.Content.CaptureTasks(s.ctx(c), store.ListCaptureTasksParams{UserID: principal(c).UserID,
		Status: c.Query("status"), ProjectID: c.Query("project_id"), Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	return listing(c, items, total, page, limit)
}

func (s *Server) getCaptureTask(c *fiber.Ctx) error {
	t, err := s.Content.CaptureTask(s.ctx(c), principal(c).UserID, c.Params("id"))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"task": t})
}

// finishCaptureTask serves POST /api/capture-tasks/:id/complete and /cancel.
func (s *Server) finishCaptureTask(status string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		t, err := s.Content.FinishCaptureTask(s.ctx(c), principal(c).UserID, c.Params("id"), status)
		if err != nil {
			return err
		}
		return ok(c, fiber.StatusOK, fiber.Map{"task": t})
	}
}

// upload reads the multipart file of field (and tags, project_id) into an UploadInput.
func (s *Server) upload(c *fiber.Ctx, field string) (content.UploadInput, func(), error) {
	fh, err := c.FormFile(field)
	if err != nil {
		return content.UploadInput{}, nil, errcode.Invalid(field, "is required (multipart form field "+field+")")
	}
	if fh.Size > int64(s.Config.UploadLimit) {
		return content.UploadInput{}, nil, errcode.New(errcode.Validation,
			fmt.Sprintf("File too large (limit %d bytes)", s.Config.UploadLimit)).WithStatus(fiber.StatusRequestEntityTooLarge)
	}
	pid, err := s.checkedProject(c, firstSet(c.FormValue("project_id"), c.FormValue("projectId")))
	if err != nil {
		return content.UploadInput{}, nil, err
	}
	tags, err := formTags(c.FormValue("tags"))
	if err != nil {
		return content.UploadInput{}, nil, err
	}
	meta, err := formMeta(c)
	if err != nil {
		return content.UploadInput{}, nil, err
	}
	f, err := fh.Open()
	if err != nil {
		return content.UploadInput{}, nil, fmt.Errorf("api: open upload: %w", err)
	}
	return content.UploadInput{UserID: principal(c).UserID, ProjectID: pid, Name: fh.Filename,
		DeclaredType: fh.Header.Get(fiber.HeaderContentType), Size: fh.Size, Body: f, Tags: tags, Meta: meta}, func() { f.Close() }, nil
}

// formMeta reads an upload's focal point (focus "x,y", or focus_x and focus_y) and description.
func formMeta(c *fiber.Ctx) (content.MetaChange, error) {
	var m content.MetaChange
	f, err := content.FormFocus(c.FormValue("focus"), c.FormValue("focus_x"), c.FormValue("focus_y"))
	if err != nil {
		return m, err
	}
	m.Focus = f
	if d, err := content.CleanDescription("description", c.FormValue("description")); err != nil {
		return m, err
	} else if d != "" {
		m.Description = &d
	}
	return m, nil
}

// formTags reads tags as a JSON array or a comma-separated list.
func formTags(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if strings.HasPrefix(v, "[") {
		var tags []string
		if err := json.Unmarshal([]byte(v), &tags); err != nil {
			return nil, errcode.Invalid("tags", "must be a JSON array of strings or a comma-separated list")
		}
		return tags, nil
	}
	return strings.Split(v, ","), nil
}

func (s *Server) uploadMaterial(c *fiber.Ctx) error {
	in, done, err := s.upload(c, "file")
	if err != nil {
		return err
	}
	defer done()
	a, err := s.Content.Upload(s.ctx(c), in)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"asset": a})
}

func (s *Server) uploadInspiration(c *fiber.Ctx) error {
	field := "media"
	if _, err := c.FormFile("media"); err != nil {
		if _, err := c.FormFile("file"); err != nil {
			return errcode.Invalid("media", "is required (multipart form field media or file)")
		}
		field = "file"
	}
	in, done, err := s.upload(c, field)
	if err != nil {
		return err
	}
	defer done()
	rec, a, err := s.Content.InspirationUpload(s.ctx(c), in, c.FormValue("title"))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"id": rec.ID, "inspiration": rec, "asset": a})
}

func (s *Server) parseLink(c *fiber.Ctx) error {
	var in struct {
		projectRef
		URL string `json:"url"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	if err := fieldLen("url", strings.TrimSpace(in.URL), true, 2048); err != nil {
		return err
	}
	pid, err := s.checkedProject(c, in.id())
	if err != nil {
		return err
	}
	rec, assets, err := s.Content.ParseLink(s.ctx(c), principal(c).UserID, pid, in.URL)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusCreated, fiber.Map{"corpus": rec, "assets": assets})
}

func (s *Server) listCorpus(c *fiber.Ctx) error {
	page, limit, offset, err := paging(c)
	if err != nil {
		return err
	}
	tag, err := queryTag(c)
	if err != nil {
		return err
	}
	ct := c.Query("content_type")
	if ct != "" && ct != "text" && ct != "image" && ct != "video" {
		return errcode.Invalid("content_type", "must be text, image or video")
	}
	pid, err := s.queryProject(c)
	if err != nil {
		return err
	}
	items, total, err := s.Content.ListCorpus(s.ctx(c), store.ListCorpusParams{UserID: principal(c).UserID, ProjectID: pid,
		Tag: tag, ContentType: ct, Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	return listing(c, items, total, page, limit)
}

func (s *Server) getCorpus(c *fiber.Ctx) error {
	rec, assets, err := s.Content.Corpus(s.ctx(c), principal(c).UserID, c.Params("id"))
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"corpus": rec, "relatedAssets": assets})
}

func (s *Server) updateCorpus(c *fiber.Ctx) error {
	var in struct {
		Status string `json:"status"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	rec, err := s.Content.SetCorpusStatus(s.ctx(c), principal(c).UserID, c.Params("id"), in.Status)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"corpus": rec})
}

func (s *Server) deleteCorpus(c *fiber.Ctx) error {
	if err := s.Content.DeleteCorpus(s.ctx(c), principal(c).UserID, c.Params("id")); err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"deleted": true, "id": c.Params("id")})
}

func (s *Server) listMaterials(c *fiber.Ctx) error {
	page, limit, offset, err := paging(c)
	if err != nil {
		return err
	}
	typ := c.Query("type")
	if typ != "" && typ != store.AssetImage && typ != store.AssetVideo && typ != store.AssetAudio && typ != store.AssetCaptions {
		return errcode.Invalid("type", "must be image, video, audio or captions")
	}
	tag, err := queryTag(c)
	if err != nil {
		return err
	}
	pid, err := s.queryProject(c)
	if err != nil {
		return err
	}
	items, total, err := s.Content.ListAssets(s.ctx(c), store.ListAssetsParams{UserID: principal(c).UserID, ProjectID: pid,
		FileType: typ, Tag: tag, Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	views, err := s.Content.Views(s.ctx(c), principal(c).UserID, items)
	if err != nil {
		return err
	}
	return listing(c, views, total, page, limit)
}

// getMaterial answers one asset of the caller's with its cover (404 for anyone else's).
func (s *Server) getMaterial(c *fiber.Ctx) error {
	a, err := s.Content.OwnAsset(s.ctx(c), principal(c).UserID, c.Params("id"))
	if err != nil {
		return err
	}
	return s.assetAnswer(c, a)
}

// assetAnswer answers one of the caller's assets as the library shows it (its cover, signed URLs).
func (s *Server) assetAnswer(c *fiber.Ctx, a *store.Asset) error {
	v, err := s.Content.View(s.ctx(c), a)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"asset": v})
}

// updateMaterial changes the creator's metadata of one of their assets: {metadata: {focus,
// description}}. Only those two keys; the rest of the metadata is the host's and is kept.
func (s *Server) updateMaterial(c *fiber.Ctx) error {
	var in struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.Metadata == nil {
		return errcode.Invalid("metadata", "is required: an object with focus and/or description")
	}
	var ch content.MetaChange
	for k, raw := range in.Metadata {
		switch k {
		case "focus":
			f, clear, err := content.JSONFocus("metadata.focus", raw)
			if err != nil {
				return err
			}
			ch.Focus, ch.ClearFocus = f, clear
		case "description":
			var d *string
			if err := json.Unmarshal(raw, &d); err != nil {
				return errcode.Invalid("metadata.description", "must be a string (or null or \"\" to remove it)")
			}
			clean := ""
			if d != nil {
				var err error
				if clean, err = content.CleanDescription("metadata.description", *d); err != nil {
					return err
				}
			}
			ch.Description = &clean
		default:
			return errcode.Invalid("metadata."+k, "cannot be set: only focus and description are the creator's")
		}
	}
	a, err := s.Content.SetMeta(s.ctx(c), principal(c).UserID, c.Params("id"), ch)
	if err != nil {
		return err
	}
	return s.assetAnswer(c, a)
}

func (s *Server) batchDeleteMaterials(c *fiber.Ctx) error {
	var in struct {
		IDs []string `json:"ids"`
	}
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.IDs == nil {
		return errcode.Invalid("ids", "is required")
	}
	if len(in.IDs) > 500 {
		return errcode.Invalid("ids", "at most 500 ids")
	}
	n, err := s.Content.DeleteAssets(s.ctx(c), principal(c).UserID, in.IDs)
	if err != nil {
		return err
	}
	return ok(c, fiber.StatusOK, fiber.Map{"deletedCount": n})
}
