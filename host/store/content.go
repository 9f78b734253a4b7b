package store

import (
	"context"
	"encoding/json"
	"time"
)

// Corpus statuses (SPEC.md: inspiration note states).
const (
	CorpusUnread   = "unread"
	CorpusRead     = "read"
	CorpusArchived = "archived"
)

// Corpus is a user corpus record: an inspiration note (collected link or text, uploaded media) or
// a corpus item. Both are the same table (DECISIONS.md, Shapes).
type Corpus struct {
	ID              string          `json:"id" format:"uuid"`
	UserID          string          `json:"user_id" format:"uuid"`
	ProjectID       string          `json:"project_id"`
	InspirationType string          `json:"inspiration_type"` // collection, trend
	CorpusType      string          `json:"corpus_type"`      // article, script, quote
	ContentType     string          `json:"content_type"`     // text, image, video
	Title           string          `json:"title"`
	Content         string          `json:"content"`
	AISummary       string          `json:"ai_summary"`
	AITags          []string        `json:"ai_tags"`
	Tags            []string        `json:"tags"`
	SourcePlatform  string          `json:"source_platform"`
	SourceURL       string          `json:"source_url"`
	MediaURLs       []string        `json:"media_urls"`
	Metadata        json.RawMessage `json:"metadata"`
	Status          string          `json:"status" enum:"unread,read,archived"`
	UsageCount      int             `json:"usage_count"`
	IsFeatured      bool            `json:"is_featured"`
	IsDeleted       bool            `json:"is_deleted"`
	CreatedAt       time.Time       `json:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
}

// ListCorpusParams filters and pages one user's corpus records, newest first. Deleted records are
// never listed. Empty fields do not filter.
type ListCorpusParams struct {
	UserID          string // required
	ProjectID       string
	Tag             string // records whose tags hold this exact tag
	ContentType     string // text, image, video
	InspirationType string // collection, trend
	Smart           bool   // only records with an AI summary
	Limit           int
	Offset          int
}

// CorpusCounts are the feed statistics of one user (optionally within a project).
type CorpusCounts struct {
	Total      int `json:"total"`
	Collection int `json:"collection"`
	Smart      int `json:"smart"`
	Trend      int `json:"trend"`
	Asset      int `json:"asset"`
}

// CaptureTask is a shooting task created from an inspiration.
type CaptureTask struct {
	ID               string          `json:"id" format:"uuid"`
	UserID           string          `json:"user_id" format:"uuid"`
	ProjectID        string          `json:"project_id"`
	Title            string          `json:"title"`
	Description      string          `json:"description"`
	TaskType         string          `json:"task_type"`                                 // shoot
	Status           string          `json:"status" enum:"pending,completed,cancelled"` // pending on creation
	ReferenceContent json.RawMessage `json:"reference_content" doc:"the inspiration it came from: inspiration_id, source_platform, reference_url, reference_cover"`
	CreatedAt        time.Time       `json:"created_at"`
	UpdatedAt        time.Time       `json:"updated_at"`
}

// Capture task states: pending on creation, then completed (the shoot is done) or cancelled.
const (
	CapturePending   = "pending"
	CaptureCompleted = "completed"
	CaptureCancelled = "cancelled"
)

// CorpusStatusParams name a live corpus record of UserID and the status SetCorpusStatus gives it.
type CorpusStatusParams struct {
	ID, UserID string
	Status     string // unread, read or archived
}

// CaptureTaskStatusParams move UserID's capture task ID from one of From to Status
// (SetCaptureTaskStatus).
type CaptureTaskStatusParams struct {
	ID, UserID string
	From       []string
	Status     string
}

// ListCaptureTasksParams page one user's capture tasks; Status and ProjectID filter when set.
type ListCaptureTasksParams struct {
	UserID, Status, ProjectID string
	Limit, Offset             int
}

// Asset file types.
const (
	AssetImage = "image"
	AssetVideo = "video"
	AssetAudio = "audio"
	// AssetCaptions is a caption file (WebVTT or SRT) a run made beside its video; never uploaded.
	AssetCaptions = "captions"
)

// Asset is a unified asset: an uploaded or generated media file.
type Asset struct {
	ID              string          `json:"id" format:"uuid"`
	UserID          string          `json:"user_id" format:"uuid"`
	ProjectID       string          `json:"project_id"`
	FilePath        string          `json:"file_path"` // relative to the data directory (a storage key)
	FileType        string          `json:"file_type" enum:"image,video,audio,captions"`
	MimeType        string          `json:"mime_type"`
	FileSize        int64           `json:"file_size"`
	FileURL         string          `json:"file_url"`
	OriginalName    string          `json:"original_name"`
	Metadata        json.RawMessage `json:"metadata" doc:"duration, width, height, tags; the creator's focus {x, y} and description (PATCH /api/materials/{id}); a generated video's thumbnail_path, captions_vtt_path, captions_srt_path"`
	SourceTaskID    string          `json:"source_task_id"`
	SourceRunID     string          `json:"source_run_id"` // the workflow run that made the file
	RelatedCorpusID string          `json:"related_corpus_id"`
	Tags            []string        `json:"tags"`
	CreatedAt       time.Time       `json:"created_at"`
	IsDeleted       bool            `json:"is_deleted"`
}

// AssetMetadataParams names the metadata keys SetAssetMetadata changes on one user's asset.
type AssetMetadataParams struct {
	UserID, ID string
	Set        map[string]any // key -> value (any JSON value); nil removes the key
}

// ListAssetsParams filters and pages one user's assets, newest first; deleted ones never appear.
type ListAssetsParams struct {
	UserID          string // required
	ProjectID       string
	FileType        string
	Tag             string
	RelatedCorpusID string
	Limit           int
	Offset          int
}

// MaterialParams choose a project's material for a render (ListMaterial).
type MaterialParams struct {
	UserID    string   // required: the project's owner
	ProjectID string   // required
	Tags      []string // material with any of these tags comes first
	Limit     int
}

// Content stores inspiration and corpus records, capture tasks and assets.
type Content interface {
	CreateCorpus(ctx context.Context, c *Corpus) error
	// GetCorpus returns the record even when soft-deleted (callers check IsDeleted and UserID).
	GetCorpus(ctx context.Context, id string) (*Corpus, error)
	ListCorpus(ctx context.Context, p ListCorpusParams) ([]Corpus, int, error)
	// CountCorpus counts a user's records (and assets) by feed tab; projectID "" counts all.
	CountCorpus(ctx context.Context, userID, projectID string) (CorpusCounts, error)
	// SetCorpusStatus changes the status of a live record of p.UserID; ErrNotFound otherwise.
	SetCorpusStatus(ctx context.Context, p CorpusStatusParams) error
	// SoftDeleteCorpus marks a live record of userID deleted; ErrNotFound otherwise.
	SoftDeleteCorpus(ctx context.Context, id, userID string) error
	// AddCorpusUsage adds delta to usage_count of a live record; ErrNotFound otherwise.
	AddCorpusUsage(ctx context.Context, id string, delta int) error

	CreateCaptureTask(ctx context.Context, t *CaptureTask) error
	GetCaptureTask(ctx context.Context, id string) (*CaptureTask, error)
	// ListCaptureTasks pages a user's capture tasks, newest first, with the total.
	ListCaptureTasks(ctx context.Context, p ListCaptureTasksParams) ([]CaptureTask, int, error)
	// SetCaptureTaskStatus moves p.UserID's capture task from one of p.From to p.Status and returns
	// it; ErrNotFound when it is not theirs, ErrStale when it is in another state.
	SetCaptureTaskStatus(ctx context.Context, p CaptureTaskStatusParams) (*CaptureTask, error)

	CreateAsset(ctx context.Context, a *Asset) error
	// GetAsset returns the asset even when soft-deleted.
	GetAsset(ctx context.Context, id string) (*Asset, error)
	// GetAssetByPath returns userID's newest live asset whose file_path is filePath, or ErrNotFound.
	GetAssetByPath(ctx context.Context, userID, filePath string) (*Asset, error)
	// AssetFileKnown reports whether any asset row, deleted ones included, names filePath.
	AssetFileKnown(ctx context.Context, filePath string) (bool, error)
	// ListRunAssets returns the assets a workflow run made (deleted ones too), oldest first.
	ListRunAssets(ctx context.Context, runID string) ([]Asset, error)
	ListAssets(ctx context.Context, p ListAssetsParams) ([]Asset, int, error)
	// DeleteAssets removes the rows of userID's assets among ids (rows an older version only
	// marked deleted too) and returns the ids removed, each once; their bytes are the caller's.
	DeleteAssets(ctx context.Context, userID string, ids []string) ([]string, error)
	// LiveAssetPaths returns which of paths (storage keys) a live asset of userID names, each once.
	LiveAssetPaths(ctx context.Context, userID string, paths []string) ([]string, error)
	// ListMaterial returns up to p.Limit pictures and clips of a project (image and video assets
	// of its owner, not deleted, not made by a run), from the whole project however many assets
	// it holds: those tagged with one of p.Tags first, then the newest first.
	ListMaterial(ctx context.Context, p MaterialParams) ([]Asset, error)
	// SetAssetMetadata sets the top-level keys of p.Set in the metadata of p.UserID's live asset
	// p.ID (a nil value removes its key), keeping every other key, and returns the asset as
	// stored. Concurrent changes of other keys are not lost (a compare-and-set, tried again when
	// another write came between). ErrNotFound when the asset is not the user's or is deleted.
	SetAssetMetadata(ctx context.Context, p AssetMetadataParams) (*Asset, error)

	Batches
}

// Batch kinds.
const (
	BatchCollect = "collect"
	BatchRun     = "run"
)

// Batch is one call of the batch routes: links collected or runs started, one item each.
type Batch struct {
	ID        string          `json:"id"`
	UserID    string          `json:"user_id"`
	ProjectID string          `json:"project_id"`
	Kind      string          `json:"kind"`
	Items     json.RawMessage `json:"items"` // a JSON array
	CreatedAt time.Time       `json:"created_at"`
}

// Batches stores batches.
type Batches interface {
	CreateBatch(ctx context.Context, b *Batch) error
	GetBatch(ctx context.Context, id string) (*Batch, error)
}
