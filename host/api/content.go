package api

import (
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/gofiber/fiber/v2"

	"github.com/reelforge/reelforge/host/content"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// contentOperations declares the Content family (typed: operations.go): inspirations and the
// unified feed, capture tasks, the corpus, materials, their uploads and chat. The file routes are
// declared apart (fileOperations), ahead of authentication.
func (s *Server) contentOperations(api huma.API) {
	const tag = "Content"
	register(api, op{Method: "POST", Path: "/api/inspiration/collect", Tag: tag, Summary: "Collect an inspiration", Status: 201,
		Errors: []int{403}}, s.collectInspiration)
	register(api, op{Method: "GET", Path: "/api/inspiration/unified-feed", Tag: tag, Summary: "Inspirations and assets in one feed",
		Errors: []int{403}}, s.unifiedFeed)
	register(api, op{Method: "POST", Path: "/api/inspiration/parse-link", Tag: tag, Summary: "Parse a douyin, xiaohongshu or weibo link",
		Status: 201, Errors: []int{403, 502}}, s.parseLink)
	register(api, op{Method: "POST", Path: "/api/inspiration/{id}/convert-to-task", Tag: tag,
		Summary: "Create a capture task from an inspiration", Status: 201, Errors: []int{404}}, s.convertToTask)

	register(api, op{Method: "GET", Path: "/api/capture-tasks", Tag: tag, Summary: "The caller's capture tasks, newest first"},
		s.listCaptureTasks)
	register(api, op{Method: "GET", Path: "/api/capture-tasks/{id}", Tag: tag, Summary: "One of the caller's capture tasks",
		Errors: []int{404}}, s.getCaptureTask)
	register(api, op{Method: "POST", Path: "/api/capture-tasks/{id}/complete", Tag: tag,
		Summary: "Mark a pending capture task done (emits task.completed)", Errors: []int{404, 409}}, s.finishCaptureTask(store.CaptureCompleted))
	register(api, op{Method: "POST", Path: "/api/capture-tasks/{id}/cancel", Tag: tag, Summary: "Cancel a pending capture task",
		Errors: []int{404, 409}}, s.finishCaptureTask(store.CaptureCancelled))

	register(api, op{Method: "GET", Path: "/api/corpus", Tag: tag, Summary: "The caller's corpus", Errors: []int{403}}, s.listCorpus)
	register(api, op{Method: "GET", Path: "/api/corpus/{id}", Tag: tag, Summary: "A corpus record with related assets",
		Errors: []int{404}}, s.getCorpus)
	register(api, op{Method: "PUT", Path: "/api/corpus/{id}", Tag: tag, Summary: "Set a corpus record's status",
		Errors: []int{404}}, s.updateCorpus)
	register(api, op{Method: "PATCH", Path: "/api/corpus/{id}", Tag: tag, Summary: "Set a corpus record's status",
		Errors: []int{404}}, s.updateCorpus)
	register(api, op{Method: "DELETE", Path: "/api/corpus/{id}", Tag: tag, Summary: "Delete a corpus record (soft)",
		Errors: []int{404}}, s.deleteCorpus)

	register(api, op{Method: "GET", Path: "/api/materials", Tag: tag, Summary: "The caller's materials", Errors: []int{403}}, s.listMaterials)
	register(api, op{Method: "POST", Path: "/api/materials/batch-delete", Tag: tag,
		Summary: "Delete materials: their files' bytes, then their rows; the run results that named them name them no more"},
		s.batchDeleteMaterials)
	register(api, op{Method: "GET", Path: "/api/materials/{id}", Tag: tag, Summary: "One asset of the caller's, with its cover",
		Errors: []int{404}}, s.getMaterial)
	register(api, op{Method: "PATCH", Path: "/api/materials/{id}", Tag: tag,
		Summary: "Set the creator's metadata of an asset of the caller's: its focal point and description (the rest of its metadata is kept)",
		Errors:  []int{404}}, s.updateMaterial)

	register(api, op{Method: "POST", Path: "/api/ai/chat", Tag: tag,
		Summary: "Chat through the chatflow tool (local fallback when it is down)", Errors: []int{403, 502}}, s.chat)

	register(api, op{Method: "POST", Path: "/api/materials/upload", Tag: tag, Summary: "Upload a material (form field file)",
		Status: 201, Errors: []int{403, 413}, Form: uploadForm("file")}, s.uploadMaterial)
	register(api, op{Method: "POST", Path: "/api/inspiration/upload", Tag: tag, Summary: "Upload inspiration media",
		Status: 201, Errors: []int{403, 413}, Form: uploadForm("file", "media")}, s.uploadInspiration)
}

// ProjectRef is the project a typed operation's body names, by either name. Exported: huma reads
// the fields of exported embedded structs only.
type ProjectRef struct {
	ProjectID  string `json:"project_id,omitempty" doc:"one of the caller's projects (403 for any other)"`
	ProjectID2 string `json:"projectId,omitempty" doc:"alias of project_id"`
}

// ProjectQuery is the project a listing is narrowed to, by either name.
type ProjectQuery struct {
	ProjectID  string `query:"project_id" doc:"only this project's (one of the caller's projects: 403 for any other)"`
	ProjectID2 string `query:"projectId" doc:"alias of project_id"`
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

// namedProjectID is checkedProject for a typed operation: the id of the caller's project either
// name gives ("" when neither does; 403 when it is not theirs).
func (s *Server) namedProjectID(ctx context.Context, id, alias string) (string, error) {
	p, err := s.namedProject(ctx, strings.TrimSpace(firstSet(id, alias)))
	if err != nil || p == nil {
		return "", err
	}
	return p.ID, nil
}

type collectInput struct {
	Body struct {
		ProjectRef
		Type    string   `json:"type,omitempty" doc:"link or text (any case); without it: link when the content is a link alone"`
		Content string   `json:"content,omitempty" doc:"the text, or the link for type link (required, here or as url)"`
		URL     string   `json:"url,omitempty" doc:"the link, when content is not given"`
		Title   string   `json:"title,omitempty"`
		Tags    []string `json:"tags,omitempty"`
	}
}

type collectAnswer struct {
	ID          string          `json:"id" format:"uuid"`
	Inspiration *store.Corpus   `json:"inspiration"`
	Preview     content.Preview `json:"preview"`
}

func (s *Server) collectInspiration(ctx context.Context, in *collectInput) (*Data[collectAnswer], error) {
	b := in.Body
	if b.Content == "" && b.URL != "" {
		b.Content, b.Type = b.URL, firstSet(b.Type, "link")
	}
	if strings.TrimSpace(b.Content) == "" {
		// content or url: one of two names, which a schema says only with anyOf.
		return nil, errcode.Invalid("content", "is required")
	}
	pid, err := s.namedProjectID(ctx, b.ProjectID, b.ProjectID2)
	if err != nil {
		return nil, err
	}
	rec, pv, err := s.Content.Collect(ctx, content.CollectInput{UserID: caller(ctx).UserID, ProjectID: pid,
		Type: b.Type, Content: b.Content, Title: b.Title, Tags: b.Tags})
	if err != nil {
		return nil, err
	}
	return answerData(collectAnswer{rec.ID, rec, pv})
}

func firstSet(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

type feedInput struct {
	Paging
	ContentType string `query:"content_type" enum:"all,collection,smart,trend,asset,text,image,video" default:"all" doc:"the feed's tab (content.FeedTabs)"`
	Source      string `query:"source" enum:"user,studio,all" default:"all" doc:"user: collected by the caller; studio: the platform's trends"`
	ProjectQuery
}

type feedAnswer struct {
	Items   []map[string]any   `json:"items" doc:"corpus records and assets, each with its item_kind (inspiration or asset)"`
	HasMore bool               `json:"hasMore"`
	Stats   store.CorpusCounts `json:"stats"`
	Page    int                `json:"page"`
	Limit   int                `json:"limit"`
}

func (s *Server) unifiedFeed(ctx context.Context, in *feedInput) (*Data[feedAnswer], error) {
	pid, err := s.namedProjectID(ctx, in.ProjectID, in.ProjectID2)
	if err != nil {
		return nil, err
	}
	items, more, stats, err := s.Content.Feed(ctx, content.FeedParams{UserID: caller(ctx).UserID, ProjectID: pid,
		ContentType: in.ContentType, Source: in.Source, Limit: in.Limit, Offset: in.offset()})
	if err != nil {
		return nil, err
	}
	return answerData(feedAnswer{items, more, stats, in.Page, in.Limit})
}

type convertAnswer struct {
	TaskID string             `json:"task_id" format:"uuid"`
	Task   *store.CaptureTask `json:"task"`
}

func (s *Server) convertToTask(ctx context.Context, in *idPath) (*Data[convertAnswer], error) {
	task, err := s.Content.ConvertToTask(ctx, caller(ctx).UserID, in.ID)
	if err != nil {
		return nil, err
	}
	return answerData(convertAnswer{task.ID, task})
}

type listCaptureTasksInput struct {
	Paging
	// Neither is checked: they only narrow the caller's own tasks (an unknown value lists none).
	Status    string `query:"status" doc:"pending, completed or cancelled"`
	ProjectID string `query:"project_id"`
}

// listCaptureTasks serves GET /api/capture-tasks?status=&project_id=&page=&limit=: the caller's.
func (s *Server) listCaptureTasks(ctx context.Context, in *listCaptureTasksInput) (*List[store.CaptureTask], error) {
	items, total, err := s.Content.CaptureTasks(ctx, store.ListCaptureTasksParams{UserID: caller(ctx).UserID,
		Status: in.Status, ProjectID: in.ProjectID, Limit: in.Limit, Offset: in.offset()})
	if err != nil {
		return nil, err
	}
	return answerList(items, total, in.Paging)
}

type captureTaskAnswer struct {
	Task *store.CaptureTask `json:"task"`
}

func (s *Server) getCaptureTask(ctx context.Context, in *idPath) (*Data[captureTaskAnswer], error) {
	t, err := s.Content.CaptureTask(ctx, caller(ctx).UserID, in.ID)
	if err != nil {
		return nil, err
	}
	return answerData(captureTaskAnswer{t})
}

// finishCaptureTask serves POST /api/capture-tasks/{id}/complete and /cancel.
func (s *Server) finishCaptureTask(status string) func(context.Context, *idPath) (*Data[captureTaskAnswer], error) {
	return func(ctx context.Context, in *idPath) (*Data[captureTaskAnswer], error) {
		t, err := s.Content.FinishCaptureTask(ctx, caller(ctx).UserID, in.ID, status)
		if err != nil {
			return nil, err
		}
		return answerData(captureTaskAnswer{t})
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

// uploadInput is an upload's multipart form, which uploadForm has read (bounded, its files past
// 8 KB on disk) before the operation runs; the handler reads its fields (upload) and checks them
// itself, with the messages it always gave. Documented by op.Form.
type uploadInput struct {
	RawBody multipart.Form
}

// uploadForm documents the form of an upload whose file is the field files names (the first, or
// any one of them).
func uploadForm(files ...string) *huma.Schema {
	file := &huma.Schema{Type: huma.TypeString, Format: "binary", Description: "the file"}
	f := &huma.Schema{Type: huma.TypeObject, AdditionalProperties: true, Properties: map[string]*huma.Schema{
		"project_id": {Type: huma.TypeString, Format: "uuid", Description: "one of the caller's projects (403 for any other)"},
		"projectId":  {Type: huma.TypeString, Description: "alias of project_id"},
		"tags":       {Type: huma.TypeString, Description: "comma separated, or a JSON array of strings"},
		"focus":      {Type: huma.TypeString, Description: `focal point "x,y", each 0..1 from the left and the top (or focus_x and focus_y); every crop keeps it in view`},
		"focus_x":    {Type: huma.TypeNumber, Description: "focal point from the left, 0..1 (with focus_y)"},
		"focus_y":    {Type: huma.TypeNumber, Description: "focal point from the top, 0..1 (with focus_x)"},
		"description": {Type: huma.TypeString,
			Description: "what the picture or clip shows (at most 1000 characters); a template script says it where it matches the topic"},
	}}
	for _, name := range files {
		f.Properties[name] = file
		f.AnyOf = append(f.AnyOf, &huma.Schema{Required: []string{name}})
	}
	if len(files) > 1 {
		f.Properties["title"] = &huma.Schema{Type: huma.TypeString}
	} else {
		f.Required, f.AnyOf = files, nil
	}
	return f
}

type uploadedAsset struct {
	Asset *store.Asset `json:"asset"`
}

func (s *Server) uploadMaterial(ctx context.Context, _ *uploadInput) (*Data[uploadedAsset], error) {
	c := fiberCtx(ctx)
	in, done, err := s.upload(c, "file")
	if err != nil {
		return nil, err
	}
	defer done()
	a, err := s.Content.Upload(ctx, in)
	if err != nil {
		return nil, err
	}
	return answerData(uploadedAsset{a})
}

type uploadedInspiration struct {
	ID          string        `json:"id" format:"uuid"`
	Inspiration *store.Corpus `json:"inspiration"`
	Asset       *store.Asset  `json:"asset"`
}

func (s *Server) uploadInspiration(ctx context.Context, _ *uploadInput) (*Data[uploadedInspiration], error) {
	c := fiberCtx(ctx)
	field := "media"
	if _, err := c.FormFile("media"); err != nil {
		if _, err := c.FormFile("file"); err != nil {
			return nil, errcode.Invalid("media", "is required (multipart form field media or file)")
		}
		field = "file"
	}
	in, done, err := s.upload(c, field)
	if err != nil {
		return nil, err
	}
	defer done()
	rec, a, err := s.Content.InspirationUpload(ctx, in, c.FormValue("title"))
	if err != nil {
		return nil, err
	}
	return answerData(uploadedInspiration{rec.ID, rec, a})
}

type parseLinkInput struct {
	Body struct {
		ProjectRef
		URL string `json:"url" minLength:"1" maxLength:"2048" doc:"an http or https link"`
	}
}

type parseLinkAnswer struct {
	Corpus *store.Corpus `json:"corpus"`
	Assets []store.Asset `json:"assets"`
}

func (s *Server) parseLink(ctx context.Context, in *parseLinkInput) (*Data[parseLinkAnswer], error) {
	pid, err := s.namedProjectID(ctx, in.Body.ProjectID, in.Body.ProjectID2)
	if err != nil {
		return nil, err
	}
	rec, assets, err := s.Content.ParseLink(ctx, caller(ctx).UserID, pid, in.Body.URL)
	if err != nil {
		return nil, err
	}
	return answerData(parseLinkAnswer{rec, assets})
}

// ListTag is a listing's tag filter: records whose tags hold it. Exported: huma reads the fields of
// exported embedded structs only.
type ListTag struct {
	Tag string `query:"tag" maxLength:"50" doc:"only records with this tag"`
}

type listCorpusInput struct {
	Paging
	ListTag
	ContentType string `query:"content_type" enum:"text,image,video"`
	ProjectQuery
}

func (s *Server) listCorpus(ctx context.Context, in *listCorpusInput) (*List[store.Corpus], error) {
	pid, err := s.namedProjectID(ctx, in.ProjectID, in.ProjectID2)
	if err != nil {
		return nil, err
	}
	items, total, err := s.Content.ListCorpus(ctx, store.ListCorpusParams{UserID: caller(ctx).UserID, ProjectID: pid,
		Tag: strings.TrimSpace(in.Tag), ContentType: in.ContentType, Limit: in.Limit, Offset: in.offset()})
	if err != nil {
		return nil, err
	}
	return answerList(items, total, in.Paging)
}

type corpusAnswer struct {
	Corpus *store.Corpus `json:"corpus"`
}

type corpusAssetsAnswer struct {
	Corpus        *store.Corpus `json:"corpus"`
	RelatedAssets []store.Asset `json:"relatedAssets"`
}

func (s *Server) getCorpus(ctx context.Context, in *idPath) (*Data[corpusAssetsAnswer], error) {
	rec, assets, err := s.Content.Corpus(ctx, caller(ctx).UserID, in.ID)
	if err != nil {
		return nil, err
	}
	return answerData(corpusAssetsAnswer{rec, assets})
}

type updateCorpusInput struct {
	ID   string `path:"id"`
	Body struct {
		Status string `json:"status" enum:"unread,read,archived"`
	}
}

func (s *Server) updateCorpus(ctx context.Context, in *updateCorpusInput) (*Data[corpusAnswer], error) {
	rec, err := s.Content.SetCorpusStatus(ctx, caller(ctx).UserID, in.ID, in.Body.Status)
	if err != nil {
		return nil, err
	}
	return answerData(corpusAnswer{rec})
}

func (s *Server) deleteCorpus(ctx context.Context, in *idPath) (*Data[deletedAnswer], error) {
	if err := s.Content.DeleteCorpus(ctx, caller(ctx).UserID, in.ID); err != nil {
		return nil, err
	}
	return answerData(deletedAnswer{true, in.ID})
}

type listMaterialsInput struct {
	Paging
	Type string `query:"type" enum:"image,video,audio,captions"`
	ListTag
	ProjectQuery
}

func (s *Server) listMaterials(ctx context.Context, in *listMaterialsInput) (*List[content.AssetView], error) {
	pid, err := s.namedProjectID(ctx, in.ProjectID, in.ProjectID2)
	if err != nil {
		return nil, err
	}
	userID := caller(ctx).UserID
	items, total, err := s.Content.ListAssets(ctx, store.ListAssetsParams{UserID: userID, ProjectID: pid,
		FileType: in.Type, Tag: strings.TrimSpace(in.Tag), Limit: in.Limit, Offset: in.offset()})
	if err != nil {
		return nil, err
	}
	views, err := s.Content.Views(ctx, userID, items)
	if err != nil {
		return nil, err
	}
	return answerList(views, total, in.Paging)
}

type assetAnswer struct {
	Asset *content.AssetView `json:"asset"`
}

// getMaterial answers one asset of the caller's with its cover (404 for anyone else's).
func (s *Server) getMaterial(ctx context.Context, in *idPath) (*Data[assetAnswer], error) {
	a, err := s.Content.OwnAsset(ctx, caller(ctx).UserID, in.ID)
	if err != nil {
		return nil, err
	}
	return s.assetAnswer(ctx, a)
}

// assetAnswer answers one of the caller's assets as the library shows it (its cover, signed URLs).
func (s *Server) assetAnswer(ctx context.Context, a *store.Asset) (*Data[assetAnswer], error) {
	v, err := s.Content.View(ctx, a)
	if err != nil {
		return nil, err
	}
	return answerData(assetAnswer{v})
}

type updateMaterialInput struct {
	ID   string `path:"id"`
	Body struct {
		Metadata metaPatch `json:"metadata"`
	}
}

// metaPatch is the creator's metadata of an asset as a PATCH gives it: focus and description,
// each checked by the handler (content.JSONFocus, content.CleanDescription), which names what is
// wrong more precisely than a schema's validation would.
type metaPatch map[string]json.RawMessage

// Schema documents the two keys; the handler refuses any other by name.
func (metaPatch) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, Nullable: true, AdditionalProperties: true,
		Description: "focus and/or description; any other key is refused",
		Properties: map[string]*huma.Schema{
			"focus": {Description: `the focal point: {"x": .., "y": ..} or "x,y", each a number from 0 to 1 from the left and the top; null removes it`},
			"description": {Description: `what the picture or clip shows, at most 1000 characters; "" or null removes it`,
				AnyOf: []*huma.Schema{{Type: huma.TypeString}, {Type: "null"}}},
		}}
}

// updateMaterial changes the creator's metadata of one of their assets: {metadata: {focus,
// description}}. Only those two keys; the rest of the metadata is the host's and is kept.
func (s *Server) updateMaterial(ctx context.Context, in *updateMaterialInput) (*Data[assetAnswer], error) {
	if in.Body.Metadata == nil {
		return nil, errcode.Invalid("metadata", "is required: an object with focus and/or description")
	}
	var ch content.MetaChange
	for k, raw := range in.Body.Metadata {
		switch k {
		case "focus":
			f, clear, err := content.JSONFocus("metadata.focus", raw)
			if err != nil {
				return nil, err
			}
			ch.Focus, ch.ClearFocus = f, clear
		case "description":
			var d *string
			if err := json.Unmarshal(raw, &d); err != nil {
				return nil, errcode.Invalid("metadata.description", "must be a string (or null or \"\" to remove it)")
			}
			clean := ""
			if d != nil {
				var err error
				if clean, err = content.CleanDescription("metadata.description", *d); err != nil {
					return nil, err
				}
			}
			ch.Description = &clean
		default:
			return nil, errcode.Invalid("metadata."+k, "cannot be set: only focus and description are the creator's")
		}
	}
	a, err := s.Content.SetMeta(ctx, caller(ctx).UserID, in.ID, ch)
	if err != nil {
		return nil, err
	}
	return s.assetAnswer(ctx, a)
}

type batchDeleteInput struct {
	Body struct {
		IDs []string `json:"ids" maxItems:"500" doc:"the caller's assets; others' and unknown ids are passed over"`
	}
}

type deletedCountAnswer struct {
	DeletedCount int `json:"deletedCount"`
}

func (s *Server) batchDeleteMaterials(ctx context.Context, in *batchDeleteInput) (*Data[deletedCountAnswer], error) {
	if in.Body.IDs == nil {
		return nil, errcode.Invalid("ids", "is required") // null: huma lets a list be null
	}
	n, err := s.Content.DeleteAssets(ctx, caller(ctx).UserID, in.Body.IDs)
	if err != nil {
		return nil, err
	}
	return answerData(deletedCountAnswer{n})
}
