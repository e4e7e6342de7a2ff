-- A delivery's message and endpoint are checked where they can go missing, not at every enqueue
-- (docs/architecture.md, "References without foreign keys").
--
-- The two foreign keys of deliveries ran a trigger per inserted row at enqueue: a
-- `SELECT ... FOR KEY SHARE` of the message (which also writes a row-lock WAL record on the
-- message just inserted) and one of the endpoint, ~20% of the enqueue statement's time under
-- load (docs/performance.md). Neither check can fail there: every INSERT INTO deliveries takes
-- its message id from messages inserted by the same statement and its endpoint id from a SELECT
-- of endpoints, and no code path adds a delivery to an existing message. What the keys still
-- guarded is the other side: a message or endpoint deleted while deliveries point at it. That
-- side is kept, by one check per DELETE statement over the rows it removed (a transition table),
-- which costs nothing on the enqueue path and raises the same error class (23503) a foreign key
-- would.
ALTER TABLE deliveries
  DROP CONSTRAINT deliveries_message_id_fkey,
  DROP CONSTRAINT deliveries_endpoint_id_fkey;

-- One check for both: TG_ARGV[0] names the deliveries column that points at the deleted rows.
CREATE FUNCTION hookpost_deleted_rows_unreferenced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  referenced boolean;
BEGIN
  EXECUTE format('SELECT EXISTS (SELECT 1 FROM gone g JOIN deliveries d ON d.%I = g.id)', TG_ARGV[0])
    INTO referenced;
  IF referenced THEN
    RAISE EXCEPTION 'a deleted % still has deliveries', TG_TABLE_NAME
      USING ERRCODE = 'foreign_key_violation', TABLE = 'deliveries';
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER messages_deleted_unreferenced AFTER DELETE ON messages
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION hookpost_deleted_rows_unreferenced('message_id');
CREATE TRIGGER endpoints_deleted_unreferenced AFTER DELETE ON endpoints
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION hookpost_deleted_rows_unreferenced('endpoint_id');
