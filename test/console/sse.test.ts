import { describe, expect, it } from "vitest";
import { createSseParser } from "../../console/src/lib/sse.js";

const collect = () => {
  const events: Array<{ id?: string; event?: string; data: string }> = [];
  return { events, parse: createSseParser((e) => events.push(e)) };
};

describe("the console's event-stream reader", () => {
  it("yields each event with its id once its blank line arrives, across chunk boundaries", () => {
    const { events, parse } = collect();
    parse('id: 41\nevent: message.received\ndata: {"a"');
    expect(events).toEqual([]);
    parse(':1}\n\nid: 42\r\ndata: {"b":2}\r\n\r\n');
    expect(events).toEqual([
      { id: "41", event: "message.received", data: '{"a":1}' },
      { id: "42", event: undefined, data: '{"b":2}' },
    ]);
  });

  it("ignores heartbeat comments and joins multi-line data", () => {
    const { events, parse } = collect();
    parse(": heartbeat\n\n");
    parse("data: line one\ndata: line two\n\n");
    expect(events).toEqual([{ id: undefined, event: undefined, data: "line one\nline two" }]);
  });

  it("keeps the last id for events that do not repeat it (what Last-Event-ID resumes from)", () => {
    const { events, parse } = collect();
    parse("id: 7\ndata: x\n\ndata: y\n\n");
    expect(events.map((e) => e.id)).toEqual(["7", "7"]);
  });
});
