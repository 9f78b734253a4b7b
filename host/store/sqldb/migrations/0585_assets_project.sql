-- A render chooses a project's material from the whole project (ListMaterial): by project, newest
-- first, however many assets the project holds.
CREATE INDEX assets_project ON assets (project_id, created_at);
