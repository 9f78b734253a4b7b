-- Strategy tasks keep the blueprint's own task id (row ids are "<project_id>:<task_id>").
ALTER TABLE strategy_tasks ADD COLUMN task_id TEXT NOT NULL DEFAULT '';
CREATE INDEX strategy_tasks_project ON strategy_tasks (project_id, task_id);
CREATE INDEX project_auto_runs_run ON project_auto_runs (run_id);
CREATE INDEX tasks_run ON tasks (run_id);
-- Named instants the scheduler shares between hosts (the automation tool's last call).
CREATE TABLE scheduler_marks (
    name TEXT PRIMARY KEY,
    at   __TS__ NOT NULL
);
