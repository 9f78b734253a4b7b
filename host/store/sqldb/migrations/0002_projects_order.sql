-- The project listing orders by created_at DESC, id: an index in that order spares the sort.
DROP INDEX projects_user;
CREATE INDEX projects_user ON projects (user_id, created_at DESC, id);
