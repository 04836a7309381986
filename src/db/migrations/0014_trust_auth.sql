-- Session tokens are stored as their SHA-256 (hex) from now on. Sessions opened before this
-- migration keep working: their tokens are hashed here, and the app hashes the token a client
-- presents before looking it up, so the same cookie or bearer token finds the same row.
UPDATE "sessions" SET "token" = encode(sha256(convert_to("token", 'UTF8')), 'hex');
--> statement-breakpoint
-- Sign-in throttling counters shared by every instance when there is no Redis
-- (rate-limiter-flexible's Postgres store: key, points, expiry in epoch milliseconds).
CREATE TABLE "sign_in_attempts" (
	"key" varchar(255) PRIMARY KEY NOT NULL,
	"points" integer DEFAULT 0 NOT NULL,
	"expire" bigint
);
--> statement-breakpoint
-- Every change that can take a credential's rights away (a session ended, an API key deleted,
-- a member's role changed or removed) notifies every instance with the user's id at commit,
-- so that caches and open event streams act on it at once.
CREATE FUNCTION "auth_revoked_notify"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_TABLE_NAME = 'api_keys' THEN
		PERFORM pg_notify('auth_revoked', OLD.created_by::text);
	ELSE
		PERFORM pg_notify('auth_revoked', OLD.user_id::text);
	END IF;
	RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "sessions_revoked" AFTER DELETE ON "sessions"
	FOR EACH ROW EXECUTE FUNCTION "auth_revoked_notify"();
--> statement-breakpoint
CREATE TRIGGER "api_keys_revoked" AFTER DELETE ON "api_keys"
	FOR EACH ROW EXECUTE FUNCTION "auth_revoked_notify"();
--> statement-breakpoint
CREATE TRIGGER "profiles_changed" AFTER UPDATE OF "account_id", "role" OR DELETE ON "profiles"
	FOR EACH ROW EXECUTE FUNCTION "auth_revoked_notify"();
