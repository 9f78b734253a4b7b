package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reelforge/reelforge/host/app"
	"github.com/reelforge/reelforge/host/kb/parse"
	"github.com/reelforge/reelforge/host/store"
)

// hashLister lists the file hashes a knowledge source holds, with each document's state (both
// store drivers implement it).
type hashLister interface {
	SourceFileHashes(ctx context.Context, createdBy, projectID, name string) (map[string]string, error)
}

// ingestOptions configure one kb ingest.
type ingestOptions struct {
	Dir        string
	UserID     string
	ProjectID  string
	Source     string
	Visibility string
	Every      int   // files between progress lines
	MaxBytes   int64 // larger files are reported and skipped
}

// ingestStats count what an ingest did.
type ingestStats struct {
	Files, Done, Ingested, Held, Failed, Errors, Chunks int
}

// errInterrupted: the ingest stopped between two files because its context ended.
var errInterrupted = errors.New("interrupted: run the same command again to continue where it stopped")

// kbIngest: kb ingest DIR --user EMAIL [--source NAME] [--project ID] [--visibility V] [--every N].
func (e *env) kbIngest(ctx context.Context, args []string) error {
	fset := e.flags("kb ingest")
	user := fset.String("user", "", "email of the owner of the source (required)")
	source := fset.String("source", "default", "name of the knowledge source")
	project := fset.String("project", "", "project id of the source (default none)")
	visibility := fset.String("visibility", "", "private, project or org (default: the service's)")
	every := fset.Int("every", 100, "print a progress line every N files")
	pos, err := parseArgs(fset, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *user == "" {
		return fmt.Errorf("%w: kb ingest needs one folder and --user", errUsage)
	}
	if info, err := os.Stat(pos[0]); err != nil || !info.IsDir() {
		return fmt.Errorf("%w: %s is not a folder", errUsage, pos[0])
	}
	st, err := app.OpenStore(ctx, e.cfg, e.log)
	if err != nil {
		return err
	}
	defer st.Close()
	u, err := st.GetUserByEmail(ctx, strings.ToLower(strings.TrimSpace(*user)))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("kb ingest: no user with email %s (create one with `reelforge user create`)", *user)
	}
	if err != nil {
		return err
	}
	ing, err := app.NewFileIngester(ctx, e.cfg, st, e.log)
	if err != nil {
		return fmt.Errorf("kb ingest: %w", err)
	}
	held, _ := st.(hashLister) // nil: rely on the ingester's own de-duplication
	_, err = ingest(ctx, ingestOptions{Dir: pos[0], UserID: u.ID, ProjectID: *project, Source: *source,
		Visibility: *visibility, Every: *every, MaxBytes: int64(e.cfg.UploadLimit)}, ing, held, e.stdout)
	return err
}

// ingest walks o.Dir and ingests every supported file the source does not hold yet. It finishes
// the file in progress when ctx ends, then stops with errInterrupted, so every file is either
// ingested whole or left for the next run. A file the ingester refuses is reported and counted;
// the others go on.
func ingest(ctx context.Context, o ingestOptions, ing app.FileIngester, held hashLister, out io.Writer) (*ingestStats, error) {
	if o.Every <= 0 {
		o.Every = 100
	}
	var paths []string
	unsupported := 0
	err := filepath.WalkDir(o.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != o.Dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		if !parse.Supported(d.Name()) {
			unsupported++
			return nil
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kb ingest: walk %s: %w", o.Dir, err)
	}
	slices.Sort(paths)
	known := map[string]string{}
	if held != nil {
		if known, err = held.SourceFileHashes(ctx, o.UserID, o.ProjectID, o.Source); err != nil {
			return nil, fmt.Errorf("kb ingest: %w", err)
		}
	}
	s := &ingestStats{Files: len(paths)}
	fmt.Fprintf(out, "kb ingest: %d files in %s (%d unsupported skipped), source %q holds %d documents\n",
		len(paths), o.Dir, unsupported, o.Source, len(known))
	start := time.Now()
	progress := func() {
		rate := float64(s.Done) / max(time.Since(start).Seconds(), 1e-3)
		fmt.Fprintf(out, "kb ingest: %d/%d files (%.0f%%): %d ingested, %d already held, %d failed documents, %d errors, %d chunks, %.1f files/s\n",
			s.Done, s.Files, 100*float64(s.Done)/float64(max(s.Files, 1)), s.Ingested, s.Held, s.Failed, s.Errors, s.Chunks, rate)
	}
	for _, p := range paths {
		if ctx.Err() != nil {
			progress()
			return s, errInterrupted
		}
		rel, _ := filepath.Rel(o.Dir, p)
		s.Done++
		if err := ingestOne(ctx, o, ing, known, p, rel, s, out); err != nil {
			s.Errors++
			fmt.Fprintf(out, "kb ingest: %s: %v\n", rel, err)
		}
		if s.Done%o.Every == 0 {
			progress()
		}
	}
	if s.Done%o.Every != 0 || s.Done == 0 {
		progress()
	}
	if s.Errors > 0 {
		return s, fmt.Errorf("kb ingest: %d files could not be ingested", s.Errors)
	}
	return s, nil
}

func ingestOne(ctx context.Context, o ingestOptions, ing app.FileIngester, known map[string]string, path, rel string, s *ingestStats, out io.Writer) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if o.MaxBytes > 0 && info.Size() > o.MaxBytes {
		return fmt.Errorf("%d bytes is over the upload limit of %d", info.Size(), o.MaxBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	if state, ok := known[hash]; ok && (state == "indexed" || state == "failed") {
		s.Held++
		return nil
	}
	// The file in progress is finished even when ctx ends meanwhile: no half-ingested document.
	res, err := ing.IngestFile(context.WithoutCancel(ctx), app.IngestFile{UserID: o.UserID, ProjectID: o.ProjectID,
		Source: o.Source, Visibility: o.Visibility, Name: filepath.ToSlash(rel), Data: data})
	if err != nil {
		return err
	}
	known[hash] = res.Status
	switch {
	case res.Duplicate:
		s.Held++
	case res.Status == "failed":
		s.Failed++
		fmt.Fprintf(out, "kb ingest: %s: stored as failed: %s\n", rel, res.Reason)
	default:
		s.Ingested++
		s.Chunks += res.Chunks
	}
	return nil
}
