-- Files a workflow run made are assets too: the run that made them, and a lookup by storage key
-- (GET /api/assets/files/<key> serves a file by its key to the asset's owner).
ALTER TABLE assets ADD COLUMN source_run_id TEXT NOT NULL DEFAULT '';
CREATE INDEX assets_run ON assets (source_run_id);
CREATE INDEX assets_path ON assets (file_path);
