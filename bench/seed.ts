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

/**
 * Deterministic ids built from counters (kind, account, item, sub-item), in
 * the order the seed writes them: later statements join without round trips,
 * and every index receives appends rather than random inserts (which is what
 * makes seeding 20 million messages take minutes, not the better part of an hour).
 */
const KIND = { account: 1, user: 2, flow: 3, contact: 4, conversation: 5, message: 6 } as const;

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0");
function uuidOf(kind: number, a: number, b = 0, c = 0): string {
  return `${hex(kind, 2)}${hex(a, 6)}-${hex(Math.floor(b / 65536), 4)}-${hex(b % 65536, 4)}-${hex(c, 4)}-000000000000`;
}

/** The same construction in SQL; arguments are SQL integer expressions. */
function uuidSql(kind: number, a: string, b = "0", c = "0"): string {
  return `(lpad(to_hex(${kind}), 2, '0') || lpad(to_hex(${a}), 6, '0') || '-' || lpad(to_hex((${b}) >> 16), 4, '0')
    || '-' || lpad(to_hex((${b}) & 65535), 4, '0') || '-' || lpad(to_hex(${c}), 4, '0') || '-000000000000')::uuid`;
}

export const ids = {
  account: (a: number) => uuidOf(KIND.account, a),
  flow: (a: number, f: number) => uuidOf(KIND.flow, a, f),
  contact: (a: number, c: number) => uuidOf(KIND.contact, a, c),
  conversation: (a: number, c: number) => uuidOf(KIND.conversation, a, c),
};

const sqlIds = {
  account: (a: string) => uuidSql(KIND.account, a),
  user: (a: string, m: string) => uuidSql(KIND.user, a, m),
  flow: (a: string, f: string) => uuidSql(KIND.flow, a, f),
  contact: (a: string, c: string) => uuidSql(KIND.contact, a, c),
  conversation: (a: string, c: string) => uuidSql(KIND.conversation, a, c),
  message: (a: string, c: string, k: string) => uuidSql(KIND.message, a, c, k),
};

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
    `insert into accounts (id, name) select ${sqlIds.account("a")}, 'Bench account ' || a
     from generate_series($1::int, $2::int) a`,
    [first, last],
  );
  await step(
    "users + profiles",
    `with u as (
       insert into users (id, name, email)
       select ${sqlIds.user("a", "m")}, 'Member ' || m, 'member' || m || '@account' || a || '.bench'
       from generate_series($1::int, $2::int) a, generate_series(1, $3::int) m
       returning id, email)
     insert into profiles (user_id, account_id, role)
     select u.id, ${sqlIds.account("split_part(split_part(u.email, '@account', 2), '.', 1)::int")},
            case when u.email like 'member1@%' then 'owner' else 'member' end
     from u`,
    [first, last, shape.members],
  );
  await step(
    "flows",
    `insert into flows (id, account_id, user_id, name, trigger_type, trigger_config, created_at, updated_at)
     select ${sqlIds.flow("a", "f")}, ${sqlIds.account("a")}, ${sqlIds.user("a", "1")},
            'Flow ' || f, 'keyword', jsonb_build_object('keywords', jsonb_build_array('kw' || f)),
            now() - make_interval(secs => f), now() - make_interval(secs => f)
     from generate_series($1::int, $2::int) a, generate_series(1, $3::int) f`,
    [first, last, shape.flows],
  );
  await step(
    "flow nodes",
    `insert into flow_graphs (flow_id, nodes)
     select ${sqlIds.flow("a", "f")}, json_agg(json_build_object(
              'id', gen_random_uuid(), 'flow_id', ${sqlIds.flow("a", "f")}, 'node_key', 'n' || n,
              'node_type', 'send_message',
              'config', json_build_object('text', 'Step ' || n || ' of the bench flow', 'next_node_key', 'n' || (n + 1)),
              'position_x', n * 240, 'position_y', 0,
              'created_at', to_char((now() - make_interval(secs => f)) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
            order by n)
     from generate_series($1::int, $2::int) a, generate_series(1, $3::int) f, generate_series(1, $4::int) n
     group by a, f`,
    [first, last, shape.flows, shape.nodesPerFlow],
  );
  await step(
    "contacts",
    `insert into contacts (id, account_id, wa_id, name, phone)
     select ${sqlIds.contact("a", "c")}, ${sqlIds.account("a")},
            '49' || lpad(a::text, 4, '0') || lpad(c::text, 7, '0'), 'Customer ' || c,
            '49' || lpad(a::text, 4, '0') || lpad(c::text, 7, '0')
     from generate_series($1::int, $2::int) a, generate_series(1, $3::int) c`,
    [first, last, shape.contacts],
  );
  await step(
    "conversations",
    `insert into conversations (id, account_id, contact_id, last_message_at)
     select ${sqlIds.conversation("a", "c")}, ${sqlIds.account("a")}, ${sqlIds.contact("a", "c")},
            now() - make_interval(mins => c)
     from generate_series($1::int, $2::int) a, generate_series(1, $3::int) c`,
    [first, last, shape.contacts],
  );
  await step(
    "messages",
    `insert into messages (id, account_id, conversation_id, message_id, direction, sender_type, type, text,
                           status, created_at, updated_at)
     select ${sqlIds.message("a", "c", "k")}, ${sqlIds.account("a")}, ${sqlIds.conversation("a", "c")},
            'wamid.bench.' || lpad(a::text, 4, '0') || '.' || lpad(c::text, 7, '0') || '.' || lpad(k::text, 5, '0'),
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
     select ${sqlIds.account("a")}, ${sqlIds.user("a", "1")},
            '1000' || lpad(a::text, 8, '0'), $3, 'connected', now(), now()
     from generate_series($1::int, $2::int) a`,
    [first, last, encryptedToken],
  );
}

/**
 * Bulk loading: the message text search index (pg_trgm GIN) is built once after
 * every message is in, far cheaper than growing it row by row (the same
 * definition as the migration's), and the seed runs without triggers.
 */
export async function withoutSearchIndex(
  client: pg.Client,
  seed: () => Promise<void>,
  log: (m: string) => void,
) {
  await client.query("drop index if exists messages_search_idx");
  // Seeded rows are history, not changes to announce: without this, each of the 20 M messages
  // would also write an account event through the events triggers (20 minutes more of seeding).
  await client.query("set session_replication_role = replica");
  await seed();
  await client.query("reset session_replication_role");
  const started = performance.now();
  await client.query("set maintenance_work_mem = '512MB'");
  await client.query(
    "create index messages_search_idx on messages using gin (account_id, text gin_trgm_ops) with (gin_pending_list_limit = 64)",
  );
  await client.query("reset maintenance_work_mem");
  log(`  message text search index: built in ${Math.round(performance.now() - started)} ms`);
}

/** Links a signed-up user (a real session) to a seeded account. */
export async function linkUser(client: pg.Client, userId: string, account: number) {
  await client.query(
    `insert into profiles (user_id, account_id, role) values ($1, ${sqlIds.account("$2::int")}, 'member')
     on conflict (user_id) do update set account_id = excluded.account_id, role = 'member'`,
    [userId, account],
  );
}
