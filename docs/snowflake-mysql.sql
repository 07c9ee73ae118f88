-- The lease table of snowflake-agent (backend = mysql); see
-- docs/deployment-mysql.md.  `snowflake-agent --init-store` creates the
-- same table (and the database when it can), then one row per pair of the
-- pool; this file is for a DBA who prefers to create the table by hand
-- (the rows still come from --init-store: a pair without a row has no
-- timestamp mark and is never claimed).
--
--   prefix, cluster      the key space (the agent's prefix and cluster)
--   datacenter, worker   the pair
--   owner                the agent run that holds or last held the pair
--                        (a label and 128 random bits, new at every start)
--   expiry               when the lease ends, UTC on the server's clock
--                        (UTC_TIMESTAMP(6)); in the past: free
--   mark                 the pair's timestamp mark (Unix ms): the highest
--                        timestamp any holder may have stamped; only raised
--
-- InnoDB is required (transactions, row locks, crash recovery): the agent
-- refuses any other engine.
CREATE TABLE IF NOT EXISTS `snowflake_lease` (
  prefix VARBINARY(64) NOT NULL,
  cluster VARBINARY(64) NOT NULL,
  datacenter INT UNSIGNED NOT NULL,
  worker INT UNSIGNED NOT NULL,
  owner VARBINARY(255) NOT NULL DEFAULT '',
  expiry DATETIME(6) NOT NULL DEFAULT '1970-01-01 00:00:00',
  mark BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (prefix, cluster, datacenter, worker)
) ENGINE=InnoDB;
