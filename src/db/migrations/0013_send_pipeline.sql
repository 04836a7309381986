ALTER TABLE "messaging_configs" ADD COLUMN "messages_per_second" integer DEFAULT 80 NOT NULL;--> statement-breakpoint
ALTER TABLE "messaging_configs" ADD CONSTRAINT "messaging_configs_messages_per_second_range" CHECK ("messaging_configs"."messages_per_second" between 1 and 1000);--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "send_resent_at" timestamp (3) with time zone;--> statement-breakpoint
CREATE TABLE "send_rates" (
	"phone_number_id" text PRIMARY KEY NOT NULL,
	"next_at" timestamp (6) with time zone NOT NULL,
	"rate" double precision NOT NULL,
	"changed_at" timestamp (6) with time zone NOT NULL
);
--> statement-breakpoint
CREATE FUNCTION "reserve_send_slots"(p_phone text, p_limit integer, p_count integer, p_margin_ms double precision, p_increase double precision)
RETURNS TABLE (first_at_ms double precision, interval_ms double precision, current_rate double precision)
LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := clock_timestamp();
  r send_rates%ROWTYPE;
  eff double precision;
  step double precision;
  first timestamptz;
BEGIN
  INSERT INTO send_rates AS s (phone_number_id, next_at, rate, changed_at) VALUES (p_phone, t, p_limit, t)
    ON CONFLICT (phone_number_id) DO UPDATE SET phone_number_id = s.phone_number_id
    RETURNING * INTO r;
  eff := least(p_limit::double precision, r.rate + p_increase * extract(epoch from t - r.changed_at));
  step := (1000 + p_margin_ms) / eff;
  first := greatest(r.next_at, t);
  UPDATE send_rates SET next_at = first + make_interval(secs => step * p_count / 1000)
   WHERE phone_number_id = p_phone;
  RETURN QUERY SELECT extract(epoch from first)::double precision * 1000, step, eff;
END $$;
--> statement-breakpoint
CREATE FUNCTION "slow_send_rate"(p_phone text, p_limit integer, p_increase double precision)
RETURNS double precision
LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz := clock_timestamp();
  r send_rates%ROWTYPE;
  eff double precision;
BEGIN
  SELECT * INTO r FROM send_rates WHERE phone_number_id = p_phone FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO send_rates (phone_number_id, next_at, rate, changed_at) VALUES (p_phone, t, greatest(1, p_limit / 2.0), t)
      ON CONFLICT (phone_number_id) DO NOTHING;
    RETURN greatest(1, p_limit / 2.0);
  END IF;
  eff := least(p_limit::double precision, r.rate + p_increase * extract(epoch from t - r.changed_at));
  -- One decrease a second: a burst of refusals of sends already in flight is one signal.
  IF r.changed_at > t - interval '1 second' AND r.rate < p_limit THEN
    RETURN eff;
  END IF;
  UPDATE send_rates SET rate = greatest(1, eff / 2), changed_at = t WHERE phone_number_id = p_phone;
  RETURN greatest(1, eff / 2);
END $$;
