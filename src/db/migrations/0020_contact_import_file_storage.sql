-- The import's job reads the uploaded CSV back a megabyte at a time (substring). Stored compressed,
-- each read decompressed the file from its start (a 40 MB file took seconds of the database's time
-- for its pieces); stored uncompressed out of line, each read fetches just its slice.
ALTER TABLE "contact_import_files" ALTER COLUMN "data" SET STORAGE EXTERNAL;
