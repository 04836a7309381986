import { describe, expect } from "vitest";
import { appTest } from "../helpers/fixtures.js";
import { call, createFlow, node, storedFlow } from "./helpers.js";

/**
 * The app of appTest with a storage failure on demand, inside the real insert: a node keyed
 * "explode", or any node of a flow named "Explode on clone", is refused by Postgres.
 */
const it = appTest.extend<{ refusingTrigger: undefined }>({
  refusingTrigger: [
    async ({ t }, use) => {
      await t.database.pool.query(`
        create function refuse_test_nodes() returns trigger language plpgsql as $$
        begin
          if exists (select 1 from json_array_elements(new.nodes) n where n->>'node_key' = 'explode')
             or exists (select 1 from flows where id = new.flow_id and name = 'Explode on clone') then
            raise exception 'node insert refused by the test trigger';
          end if;
          return new;
        end $$;
        create trigger refuse_test_nodes before insert or update on flow_graphs
          for each row execute function refuse_test_nodes();
      `);
      await use(undefined);
    },
    { scope: "file", auto: true },
  ],
});

const keysOf = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}${i}`);

describe("node replacement is atomic", () => {
  it("keeps the previous name and nodes whole when the node insert fails, answering 500 with the storage message", async ({
    t,
    owner: { user },
  }) => {
    const { id } = await createFlow(t, user, { name: "Before" });
    await call(t, user, "PUT", `/api/flows/${id}`, { nodes: [node("a"), node("b")] });
    const before = await storedFlow(t, id);

    const response = await call(t, user, "PUT", `/api/flows/${id}`, {
      name: "After",
      nodes: [node("c"), node("explode"), node("d")],
    });
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: "node insert refused by the test trigger" });
    expect(response.body).not.toContain("insert into");
    expect(await storedFlow(t, id)).toEqual(before);
    const read = await call(t, user, "GET", `/api/flows/${id}`);
    expect(read.json().flow.name).toBe("Before");
    expect(read.json().nodes.map((n: { node_key: string }) => n.node_key)).toEqual(["a", "b"]);
  });

  it("leaves no flow behind when a template's nodes cannot be inserted", async ({
    t,
    owner: { user, accountId },
  }) => {
    const response = await call(t, user, "POST", "/api/flows", {
      template_slug: "welcome_menu",
      name: "Explode on clone",
    });
    expect(response.statusCode).toBe(500);
    expect(response.json()).toEqual({ error: "node insert refused by the test trigger" });
    const { rows } = await t.database.pool.query("select id from flows where account_id = $1", [accountId]);
    expect(rows).toEqual([]);
    expect((await call(t, user, "GET", "/api/flows")).json().flows).toEqual([]);
  });

  it("ends two concurrent PUTs with one node set whole, never a mix", async ({ t, owner: { user } }) => {
    const { id } = await createFlow(t, user);
    const setA = keysOf("a", 40);
    const setB = keysOf("b", 25);
    for (let round = 0; round < 8; round++) {
      const [first, second] = await Promise.all([
        call(t, user, "PUT", `/api/flows/${id}`, { name: `A${round}`, nodes: setA.map((k) => node(k)) }),
        call(t, user, "PUT", `/api/flows/${id}`, { name: `B${round}`, nodes: setB.map((k) => node(k)) }),
      ]);
      expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
      // Each answer shows exactly its own set: the other PUT never showed through.
      expect(first.json().nodes.map((n: { node_key: string }) => n.node_key)).toEqual(setA);
      expect(second.json().nodes.map((n: { node_key: string }) => n.node_key)).toEqual(setB);
      const { flow, keys } = await storedFlow(t, id);
      expect([setA, setB]).toContainEqual(keys);
      // The name comes from the same PUT as the nodes.
      expect(flow.name[0]).toBe(keys[0]![0]!.toUpperCase());
    }
  });

  it("lets concurrent PUTs that reuse the same keys both succeed", async ({ t, owner: { user } }) => {
    const { id } = await createFlow(t, user);
    const keys = keysOf("n", 30);
    const responses = await Promise.all(
      [1, 2, 3].map((x) =>
        call(t, user, "PUT", `/api/flows/${id}`, {
          nodes: keys.map((k) => node(k, "send_message", { text: `${x}` })),
        }),
      ),
    );
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    const { rows } = await t.database.pool.query(
      `select distinct n->'config'->>'text' as text, count(*) over () as total
       from flow_graphs g, json_array_elements(g.nodes) n where g.flow_id = $1`,
      [id],
    );
    expect(rows).toHaveLength(1);
    expect(Number(rows[0].total)).toBe(30);
  });

  it("answers 404 to a PUT racing a delete, without resurrecting nodes", async ({ t, owner: { user } }) => {
    const { id } = await createFlow(t, user);
    const [put, del] = await Promise.all([
      call(t, user, "PUT", `/api/flows/${id}`, { nodes: keysOf("x", 20).map((k) => node(k)) }),
      call(t, user, "DELETE", `/api/flows/${id}`),
    ]);
    expect(del.statusCode).toBe(200);
    expect([200, 404]).toContain(put.statusCode);
    const { rows } = await t.database.pool.query("select count(*) from flow_graphs where flow_id = $1", [id]);
    expect(Number(rows[0].count)).toBe(0);
  });
});
