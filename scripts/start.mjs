// `npm start`: compiles src/ to dist/, then runs the service in this very
// process. npm runs the script as `sh -c "exec node scripts/start.mjs"`, so
// the shell is replaced by this process: the SIGTERM or SIGINT npm forwards to
// its child reaches the service itself (a shell running "build && run" would
// die and leave the service running), and npm exits with the service's code.
//
// The build runs as a child process with a minimal environment and is waited
// for: whatever it starts (the compiler, the console bundler's esbuild
// service) never sees the service's secrets and ends with it, before the
// service starts.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { minimalEnvironment } from "./child-env.mjs";

const build = spawn(process.execPath, [fileURLToPath(new URL("./build.mjs", import.meta.url))], {
  stdio: "inherit",
  env: minimalEnvironment(),
});
const stop = (signal) => build.kill(signal);
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
const [code, signal] = await new Promise((resolve) => build.on("exit", (...result) => resolve(result)));
process.off("SIGTERM", stop);
process.off("SIGINT", stop);
if (code !== 0) {
  if (signal) console.error(`build stopped by ${signal}`);
  process.exit(code ?? 1);
}
await import("../dist/main.js");
