-- The REST lists read a page at a time by keyset (shared/pages.py): the rows after the last
-- one sent, in the list's order. Each order has an index, so a page of the last of 10,000 jobs
-- costs what the first page does. Endpoints page in (cluster, name) order: their primary key.

CREATE INDEX jobs_by_created ON jobs (cluster, created_at, name);
CREATE INDEX clusters_by_created ON clusters (created_at, name);
