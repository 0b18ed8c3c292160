-- The operations list reads newest first a page at a time by keyset (created_at, id): an index
-- in that order lets a page far down the history cost what the first page does. It replaces
-- the index on created_at alone, whose ties the page had to sort.

CREATE INDEX operations_by_created ON operations (created_at DESC, id DESC);
DROP INDEX operations_created;
