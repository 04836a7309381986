ALTER TABLE "account_invitations" ADD COLUMN "mailbox_token_hash" text;--> statement-breakpoint
ALTER TABLE "account_invitations" ADD CONSTRAINT "account_invitations_mailbox_token_hash_unique" UNIQUE("mailbox_token_hash");
