CREATE DATABASE tickets;
-- Flickr's ticket server (code.flickr.net, 2010): one row, REPLACE INTO
-- bumps its auto_increment id; SELECT LAST_INSERT_ID() returns it.
CREATE TABLE tickets.Tickets64 (
  id bigint(20) unsigned NOT NULL auto_increment,
  stub char(1) NOT NULL default '',
  PRIMARY KEY (id),
  UNIQUE KEY stub (stub)
) ENGINE=MyISAM;
