// Package content is the content side of the platform: inspiration collection (links with
// platform detection and SSRF-guarded page metadata, text notes, media; texts and page
// descriptions summarized into ai_summary for the feed's smart tab), the unified feed, the user
// corpus, capture tasks made from inspirations, materials (uploaded assets whose bytes go to a
// blob.Store: DATA_DIR or an S3-compatible bucket), the strategy diagnosis, blueprint and rewrite,
// and chat through the chatflow tool with a local fallback over the knowledge base.
//
// The api package calls a *Service; host/app builds it with New.
package content

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/blob"
	"github.com/reelforge/reelforge/host/events"
	"github.com/reelforge/reelforge/host/fileurl"
	"github.com/reelforge/reelforge/host/kb/llm"
	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/plugins/chatflow"
	"github.com/reelforge/reelforge/sdk/errcode"
)

// Chatter is a language model (host/kb/llm.Client satisfies it).
type Chatter interface {
	Chat(ctx context.Context, model string, msgs []llm.Message) (string, error)
}

// Store is what the content service needs of the database.
type Store interface {
	store.Transactor
	events.Outbox

	// The corpus (inspirations) and the capture tasks made from it.
	CreateCorpus(ctx context.Context, c *store.Corpus) error
	GetCorpus(ctx context.Context, id string) (*store.Corpus, error)
	ListCorpus(ctx context.Context, p store.ListCorpusParams) ([]store.Corpus, int, error)
	CountCorpus(ctx context.Context, userID, projectID string) (store.CorpusCounts, error)
	SetCorpusStatus(ctx context.Context, p store.CorpusStatusParams) error
	SoftDeleteCorpus(ctx context.Context, id, userID string) error
	AddCorpusUsage(ctx context.Context, id string, delta int) error
	CreateCaptureTask(ctx context.Context, t *store.CaptureTask) error
	GetCaptureTask(ctx context.Context, id string) (*store.CaptureTask, error)
	ListCaptureTasks(ctx context.Context, p store.ListCaptureTasksParams) ([]store.CaptureTask, int, error)
	SetCaptureTaskStatus(ctx context.Context, p store.CaptureTaskStatusParams) (*store.CaptureTask, error)

	// Materials and the files of runs.
	CreateAsset(ctx context.Context, a *store.Asset) error
	GetAsset(ctx context.Context, id string) (*store.Asset, error)
	GetAssetByPath(ctx context.Context, userID, filePath string) (*store.Asset, error)
	ListAssets(ctx context.Context, p store.ListAssetsParams) ([]store.Asset, int, error)
	ListMaterial(ctx context.Context, p store.MaterialParams) ([]store.Asset, error)
	SetAssetMetadata(ctx context.Context, p store.AssetMetadataParams) (*store.Asset, error)
	ListRunAssets(ctx context.Context, runID string) ([]store.Asset, error)
	DeleteAssets(ctx context.Context, userID string, ids []string) ([]string, error)
	LiveAssetPaths(ctx context.Context, userID string, paths []string) ([]string, error)
	DeleteRun(ctx context.Context, id, userID string) error

	// The strategy diagnosis saves its blueprint on the project, with SyncBlueprint's writes.
	UpdateProject(ctx context.Context, p store.UpdateProjectParams) (*store.Project, error)
	StrategyTasks
}

// StrategyTasks is what the SyncBlueprint hook writes (scheduler.SyncBlueprint's store), in the
// transaction that saves a blueprint.
type StrategyTasks interface {
	Now() time.Time
	ReplaceStrategyTasks(ctx context.Context, projectID string, tasks []store.StrategyTask) error
}

// Config configures New. Store, and DataDir or Blobs, are required; the rest is optional.
type Config struct {
	Store   Store
	DataDir string
	// Blobs holds the bytes of uploaded files; nil means the folder DataDir.
	Blobs       blob.Store
	UploadLimit int64 // bytes; 0 means 50 MiB
	Fetcher     *Fetcher
	Notifier    events.Notifier
	LLM         Chatter // nil: templates only
	Model       string
	// SummaryTimeout bounds the language model's ai_summary of a collected item; 0 means 5 s.
	SummaryTimeout time.Duration
	Chatflow       chatflow.Options // URL and DefaultChatflowID (CHATFLOW_URL, CHATFLOW_KB_ID); zero: local answers
	KB             Searcher         // nil: the local chat answer has no knowledge base
	// Credentials signs the tool credential a chat answer hands the chatflow tool (with HostURL,
	// the host's address for it to call back: CALLBACK_BASE_URL); nil: none is handed.
	Credentials CredentialIssuer
	HostURL     string
	Log         *slog.Logger
	// FileURLs verifies the signed file URLs a run hands back as references; nil: their
	// signatures are not checked (the owner check still is).
	FileURLs *fileurl.Signer
	// SyncBlueprint, when set, turns a stored blueprint into the project's strategy tasks (the
	// scheduler's hook); it runs in the transaction that saves the blueprint, on tx.
	SyncBlueprint func(ctx context.Context, tx StrategyTasks, projectID string, blueprint json.RawMessage) error
	Now           func() time.Time
}

// Service implements the content routes. It is safe for concurrent use.
type Service struct {
	st             Store
	dataDir        string // where local generators write the files of runs
	fileURLs       *fileurl.Signer
	blobs          blob.Store
	limit          int64
	fetch          *Fetcher
	notify         events.Notifier
	llm            Chatter
	model          string
	summaryTimeout time.Duration
	chatflow       chatflow.Options
	kb             Searcher
	creds          CredentialIssuer
	hostURL        string
	log            *slog.Logger
	syncBP         func(ctx context.Context, tx StrategyTasks, projectID string, blueprint json.RawMessage) error
	now            func() time.Time
	runFiles       runLocks // RecordRunFiles' turns, by run
}

// New returns a Service.
func New(cfg Config) *Service {
	s := &Service{st: cfg.Store, dataDir: cfg.DataDir, fileURLs: cfg.FileURLs, blobs: cfg.Blobs, limit: cfg.UploadLimit, fetch: cfg.Fetcher, notify: cfg.Notifier,
		llm: cfg.LLM, model: cfg.Model, chatflow: cfg.Chatflow, kb: cfg.KB, creds: cfg.Credentials, hostURL: cfg.HostURL, log: cfg.Log, syncBP: cfg.SyncBlueprint, now: cfg.Now}
	if s.limit <= 0 {
		s.limit = 50 << 20
	}
	if s.blobs == nil {
		s.blobs = blob.NewDir(cfg.DataDir)
	}
	if s.fetch == nil {
		s.fetch = NewFetcher(FetcherConfig{})
	}
	if s.notify == nil {
		s.notify = events.Discard{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.model == "" {
		s.model = "gpt-4o-mini"
	}
	if s.summaryTimeout = cfg.SummaryTimeout; s.summaryTimeout <= 0 {
		s.summaryTimeout = defaultSummaryTimeout
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Field sizes.
const (
	maxContentLen = 20000
	maxTitleLen   = 300
	maxTagLen     = 50
	maxTags       = 20
	maxURLLen     = 2048
)

// CleanTags trims, de-duplicates and bounds a tag list.
func CleanTags(in []string) ([]string, error) {
	out := []string{}
	seen := map[string]bool{}
	for _, t := range in {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		if len([]rune(t)) > maxTagLen {
			return nil, errcode.Invalid("tags", fmt.Sprintf("each tag must be at most %d characters", maxTagLen))
		}
		seen[t] = true
		out = append(out, t)
	}
	if len(out) > maxTags {
		return nil, errcode.Invalid("tags", fmt.Sprintf("at most %d tags", maxTags))
	}
	return out, nil
}

// Preview is what a collected inspiration shows before it is opened.
type Preview struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Cover       string `json:"cover"`
	Platform    string `json:"platform"`
	URL         string `json:"url,omitempty"`
	Summary     string `json:"summary,omitempty"` // the record's ai_summary
}

// CollectInput is a collect request. ProjectID must already be checked by the caller.
type CollectInput struct {
	UserID    string
	ProjectID string
	Type      string // link or text
	Content   string
	Title     string
	Tags      []string
}

// Collect creates an inspiration (a corpus record) from a link or a text. For a link the platform
// is detected and the page metadata fetched; a refused or failed fetch still creates the record,
// with the preview taken from the link alone and the reason kept in metadata.fetch_error.
// ai_summary (what the feed's smart tab lists) summarizes a text, or the page description of a
// link; a link whose page gave no description has nothing to summarize and gets none.
func (s *Service) Collect(ctx context.Context, in CollectInput) (*store.Corpus, Preview, error) {
	typ := strings.ToLower(strings.TrimSpace(in.Type))
	if typ == "" {
		typ = "text"
		if ExtractURL(in.Content) != "" && !strings.ContainsAny(strings.TrimSpace(in.Content), " \n") {
			typ = "link"
		}
	}
	if typ != "link" && typ != "text" {
		return nil, Preview{}, errcode.Invalid("type", "must be link or text")
	}
	if strings.TrimSpace(in.Content) == "" {
		return nil, Preview{}, errcode.Invalid("content", "is required")
	}
	if len([]rune(in.Content)) > maxContentLen {
		return nil, Preview{}, errcode.Invalid("content", fmt.Sprintf("must be at most %d characters", maxContentLen))
	}
	if len([]rune(in.Title)) > maxTitleLen {
		return nil, Preview{}, errcode.Invalid("title", fmt.Sprintf("must be at most %d characters", maxTitleLen))
	}
	tags, err := CleanTags(in.Tags)
	if err != nil {
		return nil, Preview{}, err
	}
	c := &store.Corpus{ID: uuid.NewString(), UserID: in.UserID, ProjectID: in.ProjectID, InspirationType: "collection",
		CorpusType: "article", ContentType: "text", Content: strings.TrimSpace(in.Content), Tags: tags, Status: store.CorpusUnread}
	meta := map[string]any{"collect_type": typ}
	var pv Preview
	if typ == "link" {
		link := ExtractURL(in.Content)
		if link == "" {
			return nil, Preview{}, errcode.Invalid("content", "must hold an http or https link")
		}
		if len(link) > maxURLLen {
			return nil, Preview{}, errcode.Invalid("content", fmt.Sprintf("link must be at most %d characters", maxURLLen))
		}
		pv = s.preview(ctx, link, meta)
		c.SourceURL, c.SourcePlatform = link, pv.Platform
		c.Title = firstNonEmpty(clip(in.Title, maxTitleLen), pv.Title)
		if pv.Description != "" {
			meta["description"] = pv.Description
			c.AISummary, meta["summary_source"] = s.summarize(ctx, c.Title, pv.Description)
		}
		if pv.Cover != "" {
			c.MediaURLs = []string{pv.Cover}
			meta["cover"] = pv.Cover
		}
	} else {
		c.Title = firstNonEmpty(clip(in.Title, maxTitleLen), clip(firstLine(c.Content), 80))
		pv = Preview{Title: c.Title, Description: clip(c.Content, 200), Platform: ""}
		c.AISummary, meta["summary_source"] = s.summarize(ctx, clip(in.Title, maxTitleLen), c.Content)
	}
	pv.Summary = c.AISummary
	c.Metadata, _ = json.Marshal(meta)
	err = store.InTx(ctx, s.st, func(tx Store) error {
		if err := tx.CreateCorpus(ctx, c); err != nil {
			return err
		}
		return events.Emit(ctx, tx, events.Event{Name: events.ContentCreated, UserID: c.UserID, ProjectID: c.ProjectID,
			Data: map[string]any{"contentId": c.ID, "type": "inspiration", "contentType": c.ContentType,
				"platform": c.SourcePlatform, "userId": c.UserID, "projectId": c.ProjectID}})
	})
	if err != nil {
		return nil, Preview{}, err
	}
	return c, pv, nil
}

// preview fetches the link's metadata; on failure the preview comes from the link alone and
// meta records why.
func (s *Service) preview(ctx context.Context, link string, meta map[string]any) Preview {
	pv := Preview{Platform: DetectPlatform(link), URL: link}
	page, err := s.fetch.Fetch(ctx, link)
	if err != nil {
		reason := "fetch failed"
		if errors.Is(err, ErrRefused) {
			reason = "refused: address not allowed"
		}
		meta["fetch_error"] = reason
		s.log.Info("inspiration preview not fetched", "reason", reason, "err", err.Error())
	} else {
		pv.Title, pv.Description, pv.Cover = page.Title, page.Description, page.Image
		if page.URL != "" && page.URL != link {
			meta["final_url"] = page.URL
			if pv.Platform == PlatformWeb {
				pv.Platform = DetectPlatform(page.URL) // a short link resolved to its platform
			}
		}
	}
	if pv.Title == "" {
		pv.Title = titleFromURL(link, pv.Platform)
	}
	return pv
}

func titleFromURL(link, platform string) string {
	u, err := url.Parse(link)
	if err != nil {
		return clip(link, 80)
	}
	t := u.Hostname() + strings.TrimRight(u.EscapedPath(), "/")
	if platform != "" && platform != PlatformWeb {
		t = platform + " · " + t
	}
	return clip(t, 120)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// FeedParams pages the unified feed.
type FeedParams struct {
	UserID      string
	ProjectID   string // checked by the caller
	ContentType string // all, collection, smart, trend, asset, text, image, video
	Source      string // user, studio, all
	Limit       int
	Offset      int
}

// FeedTabs are the content_type values of the unified feed.
var FeedTabs = []string{"all", "collection", "smart", "trend", "asset", "text", "image", "video"}

// Feed answers the unified feed: the caller's inspirations newest first (assets for the asset
// tab), whether more follow, and the tab statistics. Source user means collected by the user
// (inspiration_type collection), studio the platform's trend items, all both.
func (s *Service) Feed(ctx context.Context, p FeedParams) (items []map[string]any, hasMore bool, stats store.CorpusCounts, err error) {
	stats, err = s.st.CountCorpus(ctx, p.UserID, p.ProjectID)
	if err != nil {
		return nil, false, stats, err
	}
	items = []map[string]any{}
	tab := p.ContentType
	if tab == "" {
		tab = "all"
	}
	if tab == "asset" {
		if p.Source == "studio" {
			return items, false, stats, nil
		}
		assets, total, err := s.st.ListAssets(ctx, store.ListAssetsParams{UserID: p.UserID, ProjectID: p.ProjectID, Limit: p.Limit, Offset: p.Offset})
		if err != nil {
			return nil, false, stats, err
		}
		for i := range assets {
			items = append(items, feedItem(&assets[i], "asset"))
		}
		return items, p.Offset+len(assets) < total, stats, nil
	}
	lp := store.ListCorpusParams{UserID: p.UserID, ProjectID: p.ProjectID, Limit: p.Limit, Offset: p.Offset}
	switch tab {
	case "collection", "trend":
		lp.InspirationType = tab
	case "smart":
		lp.Smart = true
	case "text", "image", "video":
		lp.ContentType = tab
	}
	switch p.Source {
	case "user":
		if lp.InspirationType == "trend" {
			return items, false, stats, nil
		}
		lp.InspirationType = "collection"
	case "studio":
		if lp.InspirationType == "collection" {
			return items, false, stats, nil
		}
		lp.InspirationType = "trend"
	}
	recs, total, err := s.st.ListCorpus(ctx, lp)
	if err != nil {
		return nil, false, stats, err
	}
	for i := range recs {
		items = append(items, feedItem(&recs[i], "inspiration"))
	}
	return items, p.Offset+len(recs) < total, stats, nil
}

// feedItem is a record's JSON object plus item_kind (inspiration or asset).
func feedItem(v any, kind string) map[string]any {
	b, _ := json.Marshal(v) // records always encode
	m := map[string]any{}
	_ = json.Unmarshal(b, &m) // b is a record's JSON object, just encoded
	m["item_kind"] = kind
	return m
}

// ownCorpus loads a live record of userID; anything else is 404 so ids cannot be probed.
func (s *Service) ownCorpus(ctx context.Context, st Store, userID, id string) (*store.Corpus, error) {
	c, err := st.GetCorpus(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (c.IsDeleted || c.UserID != userID)) {
		return nil, errcode.New(errcode.NotFound, "Inspiration not found")
	}
	return c, err
}

// ConvertToTask creates a pending shoot capture task from the caller's inspiration and raises
// its usage_count by one, in one transaction.
func (s *Service) ConvertToTask(ctx context.Context, userID, id string) (*store.CaptureTask, error) {
	var task *store.CaptureTask
	err := store.InTx(ctx, s.st, func(tx Store) error {
		c, err := s.ownCorpus(ctx, tx, userID, id)
		if err != nil {
			return err
		}
		cover := ""
		if len(c.MediaURLs) > 0 {
			cover = c.MediaURLs[0]
		}
		ref, _ := json.Marshal(map[string]string{"inspiration_id": c.ID, "source_platform": c.SourcePlatform,
			"reference_url": c.SourceURL, "reference_cover": cover})
		task = &store.CaptureTask{ID: uuid.NewString(), UserID: userID, ProjectID: c.ProjectID,
			Title: clip(firstNonEmpty(c.Title, "Shoot from inspiration"), maxTitleLen), Description: clip(c.Content, 2000),
			TaskType: "shoot", Status: store.TaskPending, ReferenceContent: ref}
		if err := tx.CreateCaptureTask(ctx, task); err != nil {
			return err
		}
		return tx.AddCorpusUsage(ctx, c.ID, 1)
	})
	if err != nil {
		return nil, err
	}
	return task, nil
}

// Corpus returns the caller's record and its related assets.
func (s *Service) Corpus(ctx context.Context, userID, id string) (*store.Corpus, []store.Asset, error) {
	c, err := s.ownCorpus(ctx, s.st, userID, id)
	if err != nil {
		return nil, nil, err
	}
	assets, _, err := s.st.ListAssets(ctx, store.ListAssetsParams{UserID: userID, RelatedCorpusID: c.ID, Limit: 100})
	if err != nil {
		return nil, nil, err
	}
	return c, assets, nil
}

// ListCorpus pages the caller's records, optionally by tag.
func (s *Service) ListCorpus(ctx context.Context, p store.ListCorpusParams) ([]store.Corpus, int, error) {
	return s.st.ListCorpus(ctx, p)
}

// DeleteCorpus soft-deletes the caller's record (404 for anything else).
func (s *Service) DeleteCorpus(ctx context.Context, userID, id string) error {
	if err := s.st.SoftDeleteCorpus(ctx, id, userID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errcode.New(errcode.NotFound, "Corpus item not found")
		}
		return err
	}
	return nil
}

// SetCorpusStatus moves the caller's record to unread, read or archived.
func (s *Service) SetCorpusStatus(ctx context.Context, userID, id, status string) (*store.Corpus, error) {
	switch status {
	case store.CorpusUnread, store.CorpusRead, store.CorpusArchived:
	default:
		return nil, errcode.Invalid("status", "must be unread, read or archived")
	}
	if err := s.st.SetCorpusStatus(ctx, store.CorpusStatusParams{ID: id, UserID: userID, Status: status}); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errcode.New(errcode.NotFound, "Corpus item not found")
		}
		return nil, err
	}
	return s.st.GetCorpus(ctx, id)
}

// UploadInput is one uploaded file. ProjectID must already be checked by the caller.
type UploadInput struct {
	UserID          string
	ProjectID       string
	Name            string    // the client's file name: kept as original_name, never used as a path
	DeclaredType    string    // the part's Content-Type
	Size            int64     // declared size; -1 when unknown
	Body            io.Reader // a seekable Body (a multipart file) is read from its start
	Tags            []string
	RelatedCorpusID string
	OnlyTypes       []string   // refuse other file types (empty: image, video, audio)
	Meta            MetaChange // the creator's focal point and description (checked by the caller)
}

// Upload stores a file in the blob store under assets/<user_id>/<uuid><ext> after sniffing its type
// from the bytes, records the asset, emits task.asset.uploaded with it and sends an asset:sync frame.
func (s *Service) Upload(ctx context.Context, in UploadInput) (*store.Asset, error) {
	a, err := s.storeFile(ctx, in)
	if err != nil {
		return nil, err
	}
	err = store.InTx(ctx, s.st, func(tx Store) error {
		if err := tx.CreateAsset(ctx, a); err != nil {
			return err
		}
		return events.Emit(ctx, tx, assetEvent(a))
	})
	if err != nil {
		s.removeFile(ctx, a)
		return nil, err
	}
	s.notifyAsset(ctx, a, "created")
	return a, nil
}

func assetEvent(a *store.Asset) events.Event {
	return events.Event{Name: events.TaskAssetUploaded, UserID: a.UserID, ProjectID: a.ProjectID,
		Data: map[string]any{"assetId": a.ID, "fileType": a.FileType, "fileSize": a.FileSize, "fileUrl": a.FileURL,
			"userId": a.UserID, "projectId": a.ProjectID, "taskId": a.SourceTaskID}}
}

// notifyAsset sends the asset:sync frame of a new asset: its id, and the asset as listings show it
// (type, URL, cover), so a library can show it without asking.
func (s *Service) notifyAsset(ctx context.Context, a *store.Asset, action string) {
	data := map[string]any{"assetId": a.ID, "action": action}
	if v, err := s.View(ctx, a); err == nil {
		data["asset"] = v
	} else {
		s.log.Warn("content: asset:sync without the asset", "asset", a.ID, "err", err.Error())
	}
	s.notify.Notify(ctx, events.Frame{ProjectID: a.ProjectID, UserID: a.UserID, Type: events.FrameAssetSync, Data: data})
}

func tooLarge(limit int64) error {
	return errcode.New(errcode.Validation, fmt.Sprintf("File too large (limit %d bytes)", limit)).WithStatus(413)
}

// storeFile sniffs and writes the upload, returning the asset record (not yet stored).
func (s *Service) storeFile(ctx context.Context, in UploadInput) (*store.Asset, error) {
	if in.Size > s.limit {
		return nil, tooLarge(s.limit)
	}
	if in.UserID == "" || in.UserID != filepath.Base(in.UserID) || strings.ContainsAny(in.UserID, `/\.`) {
		return nil, fmt.Errorf("content: user id %q cannot name a folder", in.UserID)
	}
	head := make([]byte, 512)
	n, err := io.ReadFull(in.Body, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("content: read upload: %w", err)
	}
	head = head[:n]
	if n == 0 {
		return nil, errcode.Invalid("file", "is empty")
	}
	media, ok := Sniff(head)
	if !ok {
		return nil, errcode.Invalid("file", "type not supported: upload an image, video or audio file")
	}
	if claimed := declaredClass(in.DeclaredType, in.Name); claimed != "" && claimed != media.FileType {
		return nil, errcode.Invalid("file", "content does not match its declared type")
	}
	allowed := in.OnlyTypes
	if len(allowed) == 0 {
		allowed = []string{store.AssetImage, store.AssetVideo, store.AssetAudio}
	}
	okType := false
	for _, t := range allowed {
		okType = okType || t == media.FileType
	}
	if !okType {
		return nil, errcode.Invalid("file", "must be of type "+strings.Join(allowed, " or "))
	}
	tags, err := CleanTags(in.Tags)
	if err != nil {
		return nil, err
	}
	body, size, done, err := s.seekable(in, head)
	if err != nil {
		return nil, err
	}
	defer done()
	id := uuid.NewString()
	key := "assets/" + in.UserID + "/" + id + media.Ext
	if err := s.blobs.Put(ctx, key, body, size, media.MIME); err != nil {
		return nil, s.storeErr("content.upload", "The file could not be stored", err)
	}
	name := filepath.Base(strings.ReplaceAll(in.Name, "\\", "/"))
	if name == "." || name == "/" {
		name = ""
	}
	m := map[string]any{"tags": tags, "sniffed_mime": media.MIME, "storage": s.blobs.Kind()}
	for k, v := range in.Meta.set() {
		if v != nil {
			m[k] = v
		}
	}
	meta, _ := json.Marshal(m)
	return &store.Asset{ID: id, UserID: in.UserID, ProjectID: in.ProjectID, FilePath: key, FileType: media.FileType,
		MimeType: media.MIME, FileSize: size, FileURL: fileurl.OfMaterial(id), OriginalName: clip(name, 255),
		Metadata: meta, RelatedCorpusID: in.RelatedCorpusID, Tags: tags}, nil
}

// seekable returns the upload as a seekable stream of its exact size, within the limit: a
// multipart file already is one; any other body is copied to a temporary file first. done releases
// what it made.
func (s *Service) seekable(in UploadInput, head []byte) (body io.ReadSeeker, size int64, done func(), err error) {
	if rs, ok := in.Body.(io.ReadSeeker); ok {
		if size, err = rs.Seek(0, io.SeekEnd); err == nil {
			_, err = rs.Seek(0, io.SeekStart)
		}
		if err != nil {
			return nil, 0, nil, fmt.Errorf("content: rewind upload: %w", err)
		}
		if size > s.limit {
			return nil, 0, nil, tooLarge(s.limit)
		}
		return rs, size, func() {}, nil
	}
	f, err := os.CreateTemp("", "reelforge-upload-*")
	if err != nil {
		return nil, 0, nil, fmt.Errorf("content: spool upload: %w", err)
	}
	done = func() {
		f.Close()
		_ = os.Remove(f.Name()) // a spool file left in the temp dir is harmless
	}
	size, err = io.Copy(f, io.LimitReader(io.MultiReader(bytes.NewReader(head), in.Body), s.limit+1))
	if err == nil && size > s.limit {
		err = tooLarge(s.limit)
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		done()
		if errcode.As(err) != nil {
			return nil, 0, nil, err
		}
		return nil, 0, nil, fmt.Errorf("content: spool upload: %w", err)
	}
	return f, size, done, nil
}

// removeFile drops the bytes of an asset whose record could not be stored.
func (s *Service) removeFile(ctx context.Context, a *store.Asset) {
	if err := s.blobs.Delete(context.WithoutCancel(ctx), a.FilePath); err != nil {
		s.log.Warn("remove asset file", "asset", a.ID, "err", err.Error())
	}
}

// InspirationUpload stores an image or video and records it as an inspiration of that content
// type, the asset related to it.
func (s *Service) InspirationUpload(ctx context.Context, in UploadInput, title string) (*store.Corpus, *store.Asset, error) {
	in.OnlyTypes = []string{store.AssetImage, store.AssetVideo}
	cid := uuid.NewString()
	in.RelatedCorpusID = cid
	a, err := s.storeFile(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	meta, _ := json.Marshal(map[string]any{"collect_type": "upload", "asset_id": a.ID, "original_name": a.OriginalName})
	c := &store.Corpus{ID: cid, UserID: in.UserID, ProjectID: in.ProjectID, InspirationType: "collection", CorpusType: "article",
		ContentType: a.FileType, Title: clip(firstNonEmpty(title, a.OriginalName, a.FileType+" inspiration"), maxTitleLen),
		MediaURLs: []string{a.FileURL}, Tags: a.Tags, Metadata: meta, Status: store.CorpusUnread}
	err = store.InTx(ctx, s.st, func(tx Store) error {
		if err := tx.CreateCorpus(ctx, c); err != nil {
			return err
		}
		if err := tx.CreateAsset(ctx, a); err != nil {
			return err
		}
		if err := events.Emit(ctx, tx, assetEvent(a)); err != nil {
			return err
		}
		return events.Emit(ctx, tx, events.Event{Name: events.ContentCreated, UserID: c.UserID, ProjectID: c.ProjectID,
			Data: map[string]any{"contentId": c.ID, "type": "inspiration", "contentType": c.ContentType, "userId": c.UserID,
				"projectId": c.ProjectID, "assetId": a.ID}})
	})
	if err != nil {
		s.removeFile(ctx, a)
		return nil, nil, err
	}
	s.notifyAsset(ctx, a, "created")
	return c, a, nil
}

// ParseLink collects a link as an inspiration and answers it with its assets (none are downloaded
// from the page: media of other platforms stay links in media_urls).
func (s *Service) ParseLink(ctx context.Context, userID, projectID, link string) (*store.Corpus, []store.Asset, error) {
	if strings.TrimSpace(link) == "" {
		return nil, nil, errcode.Invalid("url", "is required")
	}
	if ExtractURL(link) == "" {
		return nil, nil, errcode.Invalid("url", "must be an http or https link")
	}
	c, _, err := s.Collect(ctx, CollectInput{UserID: userID, ProjectID: projectID, Type: "link", Content: link})
	if err != nil {
		return nil, nil, err
	}
	return c, []store.Asset{}, nil
}

// ListAssets pages the caller's assets.
func (s *Service) ListAssets(ctx context.Context, p store.ListAssetsParams) ([]store.Asset, int, error) {
	return s.st.ListAssets(ctx, p)
}

// storeErr is a failure of the blob store: EXTERNAL_SERVICE_ERROR (502) for an object store, whose
// outage is not the host's fault; a plain internal error for the local folder.
func (s *Service) storeErr(op, msg string, err error) error {
	if s.blobs.Kind() == "local" {
		return fmt.Errorf("%s: %w", op, err)
	}
	return errcode.E(op, errcode.ExternalService, msg, err)
}
