/** A multipart/form-data body written byte for byte, so tests control every header (odd filenames too). */
export function multipart(
  parts: Array<
    { name: string; value: string } | { name: string; filename: string; type: string; bytes: Buffer }
  >,
) {
  const boundary = "----test-boundary-7MA4YWxkTrZu0gW";
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if ("bytes" in part) head += `; filename="${part.filename}"\r\nContent-Type: ${part.type}`;
    chunks.push(
      Buffer.from(`${head}\r\n\r\n`),
      "bytes" in part ? part.bytes : Buffer.from(part.value),
      Buffer.from("\r\n"),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return {
    payload: Buffer.concat(chunks),
    headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
  };
}
