package sqldb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/reelforge/reelforge/host/store"
)

// strList encodes a string list as a JSON argument ([] when empty), without HTML escaping so the
// stored text matches what the tag filter looks for on both databases.
func strList(v []string) any {
	if v == nil {
		v = []string{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a []string always encodes
	return strings.TrimSpace(b.String())
}

func decodeList(raw json.RawMessage) []string {
	out := []string{}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &out) // a malformed stored list reads as empty
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// tagPattern is a LIKE pattern (escape character '!') matching a JSON string array that holds tag.
func tagPattern(tag string) string {
	q := strList([]string{tag}).(string)
	q = q[1 : len(q)-1] // "tag" with JSON escapes
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return "%" + r.Replace(q) + "%"
}

// tagCond is the condition of a tag filter on a JSON array column; ph is the pattern's placeholder.
func tagCond(col, ph string) string {
	return "CAST(" + col + " AS TEXT) LIKE " + ph + " ESCAPE '!'"
}

const corpusCols = `id, user_id, project_id, inspiration_type, corpus_type, content_type, title, content, ai_summary,
	ai_tags, tags, source_platform, source_url, media_urls, metadata, status, usage_count, is_featured, is_deleted,
	created_at, updated_at`

func scanCorpus(r Row) (*store.Corpus, error) {
	var c store.Corpus
	var aiTags, tags, media, meta json.RawMessage
	if err := r.Scan(&c.ID, &c.UserID, &c.ProjectID, &c.InspirationType, &c.CorpusType, &c.ContentType, &c.Title,
		&c.Content, &c.AISummary, JSON(&aiTags), JSON(&tags), &c.SourcePlatform, &c.SourceURL, JSON(&media), JSON(&meta),
		&c.Status, &c.UsageCount, &c.IsFeatured, &c.IsDeleted, Time(&c.CreatedAt), Time(&c.UpdatedAt)); err != nil {
		return nil, err
	}
	c.AITags, c.Tags, c.MediaURLs = decodeList(aiTags), decodeList(tags), decodeList(media)
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	c.Metadata = meta
	return &c, nil
}

// CreateCorpus implements store.Content.
func (db *DB) CreateCorpus(ctx context.Context, c *store.Corpus) error {
	now := db.Now()
	c.CreatedAt, c.UpdatedAt = now, now
	if c.InspirationType == "" {
		c.InspirationType = "collection"
	}
	if c.CorpusType == "" {
		c.CorpusType = "article"
	}
	if c.ContentType == "" {
		c.ContentType = "text"
	}
	if c.Status == "" {
		c.Status = store.CorpusUnread
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	if c.AITags == nil {
		c.AITags = []string{}
	}
	if c.MediaURLs == nil {
		c.MediaURLs = []string{}
	}
	if len(c.Metadata) == 0 {
		c.Metadata = json.RawMessage("{}")
	}
	_, err := db.Exec(ctx, `INSERT INTO corpus (`+corpusCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
		$12, $13, $14, $15, $16, $17, $18, FALSE, $19, $20)`,
		c.ID, c.UserID, c.ProjectID, c.InspirationType, c.CorpusType, c.ContentType, c.Title, c.Content, c.AISummary,
		strList(c.AITags), strList(c.Tags), c.SourcePlatform, c.SourceURL, strList(c.MediaURLs), JOr(c.Metadata, "{}"),
		c.Status, c.UsageCount, c.IsFeatured, db.T(now), db.T(now))
	return err
}

// GetCorpus implements store.Content.
func (db *DB) GetCorpus(ctx context.Context, id string) (*store.Corpus, error) {
	return scanCorpus(db.QueryRow(ctx, `SELECT `+corpusCols+` FROM corpus WHERE id = $1`, id))
}

// ListCorpus implements store.Content.
func (db *DB) ListCorpus(ctx context.Context, p store.ListCorpusParams) ([]store.Corpus, int, error) {
	var a Args
	where := []string{"is_deleted = FALSE", "user_id = " + a.Add(p.UserID)}
	where = a.Eq(where, "project_id", p.ProjectID)
	where = a.Eq(where, "content_type", p.ContentType)
	where = a.Eq(where, "inspiration_type", p.InspirationType)
	if p.Tag != "" {
		where = append(where, tagCond("tags", a.Add(tagPattern(p.Tag))))
	}
	if p.Smart {
		where = append(where, "ai_summary <> ''")
	}
	cond := strings.Join(where, " AND ")
	return queryPage(ctx, db, corpusCols, ` FROM corpus WHERE `+cond, `created_at DESC, id DESC`, &a, p.Limit, p.Offset, scanCorpus)
}

// CountCorpus implements store.Content.
func (db *DB) CountCorpus(ctx context.Context, userID, projectID string) (store.CorpusCounts, error) {
	var n store.CorpusCounts
	cond, args := "user_id = $1 AND is_deleted = FALSE", []any{userID}
	if projectID != "" {
		cond += " AND project_id = $2"
		args = append(args, projectID)
	}
	err := db.QueryRow(ctx, `SELECT COUNT(*),
		COALESCE(SUM(CASE WHEN inspiration_type = 'collection' THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN ai_summary <> '' THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN inspiration_type = 'trend' THEN 1 ELSE 0 END), 0)
		FROM corpus WHERE `+cond, args...).Scan(&n.Total, &n.Collection, &n.Smart, &n.Trend)
	if err != nil {
		return n, err
	}
	err = db.QueryRow(ctx, `SELECT COUNT(*) FROM assets WHERE `+cond, args...).Scan(&n.Asset)
	return n, err
}

// SetCorpusStatus implements store.Content.
func (db *DB) SetCorpusStatus(ctx context.Context, p store.CorpusStatusParams) error {
	n, err := db.Exec(ctx, `UPDATE corpus SET status = $3, updated_at = $4 WHERE id = $1 AND user_id = $2 AND is_deleted = FALSE`,
		p.ID, p.UserID, p.Status, db.T(db.Now()))
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// SoftDeleteCorpus implements store.Content.
func (db *DB) SoftDeleteCorpus(ctx context.Context, id, userID string) error {
	n, err := db.Exec(ctx, `UPDATE corpus SET is_deleted = TRUE, updated_at = $3 WHERE id = $1 AND user_id = $2 AND is_deleted = FALSE`,
		id, userID, db.T(db.Now()))
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

// AddCorpusUsage implements store.Content.
func (db *DB) AddCorpusUsage(ctx context.Context, id string, delta int) error {
	n, err := db.Exec(ctx, `UPDATE corpus SET usage_count = usage_count + $2, updated_at = $3 WHERE id = $1 AND is_deleted = FALSE`,
		id, delta, db.T(db.Now()))
	if err == nil && n == 0 {
		return store.ErrNotFound
	}
	return err
}

const captureCols = `id, user_id, project_id, title, description, task_type, status, reference_content, created_at, updated_at`

// CreateCaptureTask implements store.Content.
func (db *DB) CreateCaptureTask(ctx context.Context, t *store.CaptureTask) error {
	now := db.Now()
	t.CreatedAt, t.UpdatedAt = now, now
	if t.TaskType == "" {
		t.TaskType = "shoot"
	}
	if t.Status == "" {
		t.Status = store.TaskPending
	}
	_, err := db.Exec(ctx, `INSERT INTO capture_tasks (`+captureCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		t.ID, t.UserID, t.ProjectID, t.Title, t.Description, t.TaskType, t.Status, JOr(t.ReferenceContent, "{}"), db.T(now), db.T(now))
	return err
}

func scanCaptureTask(r Row) (*store.CaptureTask, error) {
	var t store.CaptureTask
	var ref json.RawMessage
	if err := r.Scan(&t.ID, &t.UserID, &t.ProjectID, &t.Title, &t.Description, &t.TaskType, &t.Status, JSON(&ref),
		Time(&t.CreatedAt), Time(&t.UpdatedAt)); err != nil {
		return nil, err
	}
	t.ReferenceContent = ref
	return &t, nil
}

// GetCaptureTask implements store.Content.
func (db *DB) GetCaptureTask(ctx context.Context, id string) (*store.CaptureTask, error) {
	return scanCaptureTask(db.QueryRow(ctx, `SELECT `+captureCols+` FROM capture_tasks WHERE id = $1`, id))
}

// ListCaptureTasks implements store.Content.
func (db *DB) ListCaptureTasks(ctx context.Context, p store.ListCaptureTasksParams) ([]store.CaptureTask, int, error) {
	var a Args
	where := []string{"user_id = " + a.Add(p.UserID)}
	where = a.Eq(where, "status", p.Status)
	where = a.Eq(where, "project_id", p.ProjectID)
	cond := strings.Join(where, " AND ")
	return queryPage(ctx, db, captureCols, ` FROM capture_tasks WHERE `+cond, `created_at DESC, id DESC`, &a, p.Limit, p.Offset, scanCaptureTask)
}

// SetCaptureTaskStatus implements store.Content: one guarded update.
func (db *DB) SetCaptureTaskStatus(ctx context.Context, p store.CaptureTaskStatusParams) (*store.CaptureTask, error) {
	var a Args
	q := `UPDATE capture_tasks SET status = ` + a.Add(p.Status) + `, updated_at = ` + a.Add(db.T(db.Now())) +
		` WHERE id = ` + a.Add(p.ID) + ` AND user_id = ` + a.Add(p.UserID) + ` AND ` + a.In("status", p.From) + ` RETURNING ` + captureCols
	t, err := scanCaptureTask(db.QueryRow(ctx, q, a.List...))
	if errors.Is(err, store.ErrNotFound) {
		if cur, gerr := db.GetCaptureTask(ctx, p.ID); gerr == nil && cur.UserID == p.UserID {
			return nil, store.ErrStale
		}
	}
	return t, err
}

const assetCols = `id, user_id, project_id, file_path, file_type, mime_type, file_size, file_url, original_name, metadata,
	source_task_id, related_corpus_id, tags, created_at, is_deleted, source_run_id`

func scanAsset(r Row) (*store.Asset, error) {
	var a store.Asset
	var meta, tags json.RawMessage
	if err := r.Scan(&a.ID, &a.UserID, &a.ProjectID, &a.FilePath, &a.FileType, &a.MimeType, &a.FileSize, &a.FileURL,
		&a.OriginalName, JSON(&meta), &a.SourceTaskID, &a.RelatedCorpusID, JSON(&tags), Time(&a.CreatedAt), &a.IsDeleted, &a.SourceRunID); err != nil {
		return nil, err
	}
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	}
	a.Metadata, a.Tags = meta, decodeList(tags)
	return &a, nil
}

// CreateAsset implements store.Content.
func (db *DB) CreateAsset(ctx context.Context, a *store.Asset) error {
	a.CreatedAt = db.Now()
	if a.Tags == nil {
		a.Tags = []string{}
	}
	if len(a.Metadata) == 0 {
		a.Metadata = json.RawMessage("{}")
	}
	_, err := db.Exec(ctx, `INSERT INTO assets (`+assetCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, FALSE, $15)`,
		a.ID, a.UserID, a.ProjectID, a.FilePath, a.FileType, a.MimeType, a.FileSize, a.FileURL, a.OriginalName,
		JOr(a.Metadata, "{}"), a.SourceTaskID, a.RelatedCorpusID, strList(a.Tags), db.T(a.CreatedAt), a.SourceRunID)
	return err
}

// GetAssetByPath implements store.Content.
func (db *DB) GetAssetByPath(ctx context.Context, userID, filePath string) (*store.Asset, error) {
	return scanAsset(db.QueryRow(ctx, `SELECT `+assetCols+` FROM assets
		WHERE file_path = $1 AND user_id = $2 AND is_deleted = FALSE ORDER BY created_at DESC, id DESC LIMIT 1`, filePath, userID))
}

// AssetFileKnown implements store.Content.
func (db *DB) AssetFileKnown(ctx context.Context, filePath string) (bool, error) {
	var n int
	err := db.QueryRow(ctx, `SELECT COUNT(*) FROM assets WHERE file_path = $1`, filePath).Scan(&n)
	return n > 0, err
}

// ListRunAssets implements store.Content.
func (db *DB) ListRunAssets(ctx context.Context, runID string) ([]store.Asset, error) {
	return queryAll(ctx, db, scanAsset, `SELECT `+assetCols+` FROM assets WHERE source_run_id = $1 ORDER BY created_at, id`, runID)
}

// GetAsset implements store.Content.
func (db *DB) GetAsset(ctx context.Context, id string) (*store.Asset, error) {
	return scanAsset(db.QueryRow(ctx, `SELECT `+assetCols+` FROM assets WHERE id = $1`, id))
}

// ListAssets implements store.Content.
func (db *DB) ListAssets(ctx context.Context, p store.ListAssetsParams) ([]store.Asset, int, error) {
	var a Args
	where := []string{"is_deleted = FALSE", "user_id = " + a.Add(p.UserID)}
	where = a.Eq(where, "project_id", p.ProjectID)
	where = a.Eq(where, "file_type", p.FileType)
	where = a.Eq(where, "related_corpus_id", p.RelatedCorpusID)
	if p.Tag != "" {
		where = append(where, tagCond("tags", a.Add(tagPattern(p.Tag))))
	}
	cond := strings.Join(where, " AND ")
	return queryPage(ctx, db, assetCols, ` FROM assets WHERE `+cond, `created_at DESC, id DESC`, &a, p.Limit, p.Offset, scanAsset)
}

// ListMaterial implements store.Content.
func (db *DB) ListMaterial(ctx context.Context, p store.MaterialParams) ([]store.Asset, error) {
	var a Args
	where := "user_id = " + a.Add(p.UserID) + " AND project_id = " + a.Add(p.ProjectID) + " AND is_deleted = FALSE" +
		" AND source_run_id = '' AND file_type IN (" + a.Add(store.AssetImage) + ", " + a.Add(store.AssetVideo) + ")"
	order := "created_at DESC, id DESC"
	if len(p.Tags) > 0 {
		conds := make([]string, len(p.Tags))
		for i, t := range p.Tags {
			conds[i] = tagCond("tags", a.Add(tagPattern(t)))
		}
		order = "CASE WHEN " + strings.Join(conds, " OR ") + " THEN 0 ELSE 1 END, " + order
	}
	return queryAll(ctx, db, scanAsset, `SELECT `+assetCols+` FROM assets WHERE `+where+` ORDER BY `+order+` LIMIT `+a.Add(p.Limit), a.List...)
}

// SetAssetMetadata implements store.Content: a read, then an UPDATE guarded by the metadata it
// read, so a write between the two is noticed and the change is made again on top of it.
func (db *DB) SetAssetMetadata(ctx context.Context, p store.AssetMetadataParams) (*store.Asset, error) {
	for range 8 {
		a, err := scanAsset(db.QueryRow(ctx, `SELECT `+assetCols+` FROM assets WHERE id = $1 AND user_id = $2 AND is_deleted = FALSE`, p.ID, p.UserID))
		if err != nil {
			return nil, err
		}
		meta := map[string]any{}
		if err := json.Unmarshal(a.Metadata, &meta); err != nil || meta == nil {
			meta = map[string]any{} // not an object (never written so): replaced by one
		}
		for k, v := range p.Set {
			if v == nil {
				delete(meta, k)
			} else {
				meta[k] = v
			}
		}
		raw, err := json.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("sqldb: asset metadata: %w", err)
		}
		n, err := db.Exec(ctx, `UPDATE assets SET metadata = $1
			WHERE id = $2 AND user_id = $3 AND is_deleted = FALSE AND COALESCE(metadata, '{}') = $4`,
			J(raw), p.ID, p.UserID, J(a.Metadata))
		if err != nil {
			return nil, err
		}
		if n == 1 {
			a.Metadata = raw
			return a, nil
		}
	}
	return nil, fmt.Errorf("sqldb: asset %s: metadata changed by other writes on every try: %w", p.ID, store.ErrStale)
}

// DeleteAssets implements store.Content.
func (db *DB) DeleteAssets(ctx context.Context, userID string, ids []string) ([]string, error) {
	var deleted []string
	err := db.WithTx(ctx, func(tx *DB) error {
		deleted = []string{}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			n, err := tx.Exec(ctx, `DELETE FROM assets WHERE id = $1 AND user_id = $2`, id, userID)
			if err != nil {
				return err
			}
			if n > 0 {
				deleted = append(deleted, id)
			}
		}
		return nil
	})
	return deleted, err
}

// LiveAssetPaths implements store.Content.
func (db *DB) LiveAssetPaths(ctx context.Context, userID string, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return []string{}, nil
	}
	var a Args
	q := `SELECT DISTINCT file_path FROM assets WHERE user_id = ` + a.Add(userID) + ` AND is_deleted = FALSE AND ` + a.In("file_path", paths)
	return queryAll(ctx, db, func(r Row) (*string, error) {
		var p string
		return &p, r.Scan(&p)
	}, q, a.List...)
}

// CreateBatch implements store.Batches.
func (db *DB) CreateBatch(ctx context.Context, b *store.Batch) error {
	b.CreatedAt = db.Now()
	_, err := db.Exec(ctx, `INSERT INTO batches (id, user_id, project_id, kind, items, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		b.ID, b.UserID, b.ProjectID, b.Kind, JOr(b.Items, "[]"), db.T(b.CreatedAt))
	return err
}

// GetBatch implements store.Batches.
func (db *DB) GetBatch(ctx context.Context, id string) (*store.Batch, error) {
	var b store.Batch
	var items json.RawMessage
	err := db.QueryRow(ctx, `SELECT id, user_id, project_id, kind, items, created_at FROM batches WHERE id = $1`, id).Scan(
		&b.ID, &b.UserID, &b.ProjectID, &b.Kind, JSON(&items), Time(&b.CreatedAt))
	if err != nil {
		return nil, err
	}
	b.Items = items
	return &b, nil
}
