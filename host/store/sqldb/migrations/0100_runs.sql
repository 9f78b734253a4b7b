-- How many times a run was taken over from a host that stopped holding its lease (crash, restart).
ALTER TABLE runs ADD COLUMN recoveries INTEGER NOT NULL DEFAULT 0;
