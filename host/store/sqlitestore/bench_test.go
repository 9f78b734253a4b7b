package sqlitestore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/reelforge/reelforge/host/store"
	"github.com/reelforge/reelforge/host/store/sqlitestore"
	"github.com/reelforge/reelforge/host/store/storetest"
)

// BenchmarkListProjects measures the store's share of GET /api/projects: one page of 20 of a
// user's projects (see BENCHMARKS.md, issue 2).
func BenchmarkListProjects(b *testing.B) {
	ctx := context.Background()
	d, err := sqlitestore.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	u := storetest.NewUser(b, d, "")
	for i := range 40 {
		p := &store.Project{ID: uuid.NewString(), UserID: u.ID, Name: fmt.Sprintf("project %d", i), Description: "bench"}
		if err := d.CreateProject(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			items, _, err := d.ListProjects(ctx, store.ListProjectsParams{UserID: u.ID, Limit: 20})
			if err != nil || len(items) != 20 {
				b.Errorf("ListProjects = %d items, %v", len(items), err)
				return
			}
		}
	})
}
