// `npm start`: compiles src/ to dist/, then runs the service in this very
// process. npm runs the script as `sh -c "exec node scripts/start.mjs"`, so
// the shell is replaced by this process: the SIGTERM or SIGINT npm forwards to
// its child reaches the service itself (a shell running "build && run" would
// die and leave the service running), and npm exits with the service's code.
await import("./build.mjs");
await import("../dist/main.js");
