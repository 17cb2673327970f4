-- Each journal batch keeps what it does to its update's open creates (the creates it begins and
-- leaves open, the operations begun earlier that it ends), and the replicas keep the creates
-- open in memory, catching up from these columns on batches another replica stored. The table
-- of open creates goes: a row inserted and deleted per create left dead tuples that every later
-- batch's check walked until autovacuum came by. Batches stored before have neither column;
-- their entries are read instead.
ALTER TABLE journal_batches ADD COLUMN opens BIGINT[], ADD COLUMN ends BIGINT[];
DROP TABLE open_creates;
