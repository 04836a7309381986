import { createHash } from "node:crypto";
import type pg from "pg";

/** How much data each bench account holds. */
export interface Shape {
  accounts: number;
  members: number;
  flows: number;
  nodesPerFlow: number;
  contacts: number;
  messagesPerContact: number;
}

export const FULL: Shape = {
  accounts: 100,
  members: 10,
  flows: 1000,
  nodesPerFlow: 20,
  contacts: 10_000,
  messagesPerContact: 20,
};

export const QUICK: Shape = {
  accounts: 5,
  members: 10,
  flows: 200,
  nodesPerFlow: 20,
  contacts: 500,
  messagesPerContact: 20,
};

/** Deterministic ids, so later statements can join without round trips. */
export const ids = {
  account: (a: number) => uuidOf(`account-${a}`),
  flow: (a: number, f: number) => uuidOf(`flow-${a}-${f}`),
  contact: (a: number, c: number) => uuidOf(`contact-${a}-${c}`),
  conversation: (a: number, c: number) => uuidOf(`conversation-${a}-${c}`),
};

/** The same construction as the SQL below: md5(seed)::uuid. */
function uuidOf(seed: string): string {
  const h = createHash("md5").update(seed).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export const phoneNumberIdOf = (a: number) => `1000${String(a).padStart(8, "0")}`;
export const waIdOf = (a: number, c: number) =>
  `49${String(a).padStart(4, "0")}${String(c).padStart(7, "0")}`;

/**
 * Writes `shape.accounts` accounts numbered from `first`, with set-based SQL
 * (generate_series), straight into the service's tables.
 */
export async function seedAccounts(
  client: pg.Client,
  shape: Shape,
  first: number,
  encryptedToken: string,
  log: (m: string) => void,
) {
  const last = first + shape.accounts - 1;
  const step = async (label: string, sql: string, params: unknown[] = []) => {
    const started = performance.now();
    const result = await client.query(sql, params);
    log(`  ${label}: ${result.rowCount ?? 0} rows in ${Math.round(performance.now() - started)} ms`);
  };
  await client.query("set synchronous_commit = off");
  await step(
    "accounts",
    `insert into accounts (id, name) select md5('account-' || a)::uuid, 'Bench account ' || a
     from generate_series($1::int, $2::int) a`,
    [first, last],
  );
  await step(
    "users + profiles",
    `with u as (
       insert into users (id, name, email)
       select md5('user-' || a || '-' || m)::uuid, 'Member ' || m, 'member' || m || '@account' || a || '.bench'
       from generate_series($1::int, $2::int) a, generate_series(1, $3::int) m
       returning id, email)
     insert into profiles (user_id, account_id, role)
     select u.id, md5('account-' || split_part(split_part(u.email, '@account', 2), '.', 1))::uuid,
            case when u.email like 'member1@%' then 'owner' else 'member' end
     from u`,
    [first, last, shape.members],
  );
  await step(
    "flows",
    `insert into flows (id, account_id, user_id, name, trigger_type, trigger_config, created_at, updated_at)
     select md5('flow-' || a || '-' || f)::uuid, md5('account-' || a)::uuid, md5('user-' || a || '-1')::uuid,
            'Flow ' || f, 'keyword', jsonb_build_object('keywords', jsonb_build_array('kw' || f)),
            now() - make_interval(secs => f), now() - make_interval(secs => f)
     from generate_series($1::int, $2::int) a, generate_series(1, $3::int) f`,
    [first, last, shape.flows],
  );
  await step(
    "flow nodes",
    `insert into flow_nodes (flow_id, node_key, node_type, config, position_x, position_y, ordinal, created_at)
     select md5('flow-' || a || '-' || f)::uuid, 'n' || n, 'send_message',
            jsonb_build_object('text', 'Step ' || n || ' of the bench flow', 'next_node_key', 'n' || (n + 1)),
            n * 240, 0, n, now() - make_interval(secs => f)
     from generate_series($1::int, $2::int) a, generate_series(1, $3::int) f, generate_series(1, $4::int) n`,
    [first, last, shape.flows, shape.nodesPerFlow],
  );
  await step(
    "contacts",
    `insert into contacts (id, account_id, wa_id, name, phone)
     select md5('contact-' || a || '-' || c)::uuid, md5('account-' || a)::uuid,
            '49' || lpad(a::text, 4, '0') || lpad(c::text, 7, '0'), 'Customer ' || c,
            '49' || lpad(a::text, 4, '0') || lpad(c::text, 7, '0')
     from generate_series($1::int, $2::int) a, generate_series(1, $3::int) c`,
    [first, last, shape.contacts],
  );
  await step(
    "conversations",
    `insert into conversations (id, account_id, contact_id, last_message_at)
     select md5('conversation-' || a || '-' || c)::uuid, md5('account-' || a)::uuid,
            md5('contact-' || a || '-' || c)::uuid, now() - make_interval(mins => c)
     from generate_series($1::int, $2::int) a, generate_series(1, $3::int) c`,
    [first, last, shape.contacts],
  );
  await step(
    "messages",
    `insert into messages (account_id, conversation_id, message_id, direction, sender_type, type, text,
                           status, created_at, updated_at)
     select md5('account-' || a)::uuid, md5('conversation-' || a || '-' || c)::uuid,
            'wamid.bench.' || a || '.' || c || '.' || k,
            case when k % 2 = 0 then 'outbound' else 'inbound' end,
            case when k % 2 = 0 then 'agent' else 'customer' end,
            'text', 'Message ' || k || ' in conversation ' || c,
            case when k % 2 = 0 then 'delivered' else 'received' end,
            now() - make_interval(mins => c) - make_interval(secs => ($4::int - k)),
            now() - make_interval(mins => c) - make_interval(secs => ($4::int - k))
     from generate_series($1::int, $2::int) a, generate_series(1, $3::int) c, generate_series(1, $4::int) k`,
    [first, last, shape.contacts, shape.messagesPerContact],
  );
  await step(
    "channel configurations",
    `insert into messaging_configs (account_id, user_id, phone_number_id, access_token, status, connected_at,
                                    registered_at)
     select md5('account-' || a)::uuid, md5('user-' || a || '-1')::uuid,
            '1000' || lpad(a::text, 8, '0'), $3, 'connected', now(), now()
     from generate_series($1::int, $2::int) a`,
    [first, last, encryptedToken],
  );
}

/** Links a signed-up user (a real session) to a seeded account. */
export async function linkUser(client: pg.Client, userId: string, account: number) {
  await client.query(
    `insert into profiles (user_id, account_id, role) values ($1, md5('account-' || $2)::uuid, 'member')
     on conflict (user_id) do update set account_id = excluded.account_id, role = 'member'`,
    [userId, account],
  );
}
