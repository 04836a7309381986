/** Parses Server-Sent Events text as it arrives; calls back per complete event. */
export function createSseParser(onEvent: (e: { id?: string; event?: string; data: string }) => void) {
  let buffer = "";
  let id: string | undefined;
  let event: string | undefined;
  let data: string[] = [];
  return (chunk: string) => {
    buffer += chunk;
    for (;;) {
      const newline = buffer.search(/\r\n|\r|\n/);
      if (newline < 0) return;
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
      if (line === "") {
        if (data.length) onEvent({ id, event, data: data.join("\n") });
        data = [];
        event = undefined;
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "data") data.push(value);
      else if (field === "id") id = value;
      else if (field === "event") event = value;
    }
  };
}
